/*
 * test_stop.c: when a timing measurement stops sampling, decided offline.
 *
 * A measurement takes rounds (one sample of each target per round) and,
 * after each, asks whether to stop. Here the rounds are replayed from fixed
 * sample sequences and a fixed clock (round k ends at k * dt seconds), so
 * every decision is known in advance: convergence, the caps, the hopeless
 * rule, and which reason wins when several hold in the same round.
 *
 * old_round is the decision measure_n made in timing.c before the stopping
 * rules were objects, kept word for word as the reference: every scenario
 * is checked against it as well as against its expected outcome, and so are
 * a few hundred drawn at random. The rules themselves (host/measure/stop.h)
 * are asked through stop_decide, as measure_n asks them.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "measure/stats.h"
#include "measure/stop.h"

/* ---- the scenarios ---- */

typedef struct scenario {
    const char *what;
    size_t nt;                  /* 1: candidate only; 2: and a baseline */
    double (*sample)(int target, size_t k, uint64_t seed);
    uint64_t seed;
    size_t min_samples, max_samples;
    double budget_s, target_ci, confidence, hopeless, dt;
    size_t want_n;              /* rounds taken */
    const char *want_reason;
} scenario;

/* A reproducible number in [0, 1) from (seed, target, k). */
static double unit(uint64_t seed, int target, size_t k)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + (uint64_t)target * 0xbf58476d1ce4e5b9ull + k * 0x94d049bb133111ebull;
    x ^= x >> 31;
    x *= 0xd6e8feb86659fd39ull;
    x ^= x >> 29;
    return (double)(x >> 11) / 9007199254740992.0;
}

/* Both targets exactly the same every sample: converges once allowed. */
static double flat(int target, size_t k, uint64_t seed) { return target ? 10.0 : 20.0; }

/* +-5% noise around 100 us (candidate) and 102 us (baseline): the median
 * takes long to reach 0.5%. */
static double noisy(int target, size_t k, uint64_t seed)
{
    return (target ? 102.0 : 100.0) * (0.95 + 0.1 * unit(seed, target, k));
}

/* A candidate ten times slower than its baseline, with 1% noise. */
static double slow(int target, size_t k, uint64_t seed)
{
    return (target ? 10.0 : 100.0) * (0.995 + 0.01 * unit(seed, target, k));
}

/* A candidate half as fast as its baseline, 2% noise: near the threshold. */
static double near_half(int target, size_t k, uint64_t seed)
{
    return (target ? 10.0 : 20.0) * (0.99 + 0.02 * unit(seed, target, k));
}

/* A slow candidate whose samples are all the same: hopeless and converged
 * become true together. */
static double slow_flat(int target, size_t k, uint64_t seed) { return target ? 10.0 : 100.0; }

static const scenario scenarios[] = {
    /* what, nt, sample, seed, min, max, budget, target_ci, conf, hopeless, dt, want_n, want */
    {"flat converges at min_samples", 1, flat, 1, 10, 1000, 10, 0.005, 0.95, 0, 0.01, 10, "converged"},
    {"flat pair converges at min_samples", 2, flat, 1, 10, 1000, 10, 0.005, 0.95, 0.5, 0.01, 10, "converged"},
    {"convergence wins over max_samples", 1, flat, 1, 10, 10, 10, 0.005, 0.95, 0, 0.01, 10, "converged"},
    {"convergence wins over the budget", 1, flat, 1, 10, 1000, 0.1, 0.005, 0.95, 0, 0.01, 10, "converged"},
    {"noise reaches max_samples", 1, noisy, 7, 10, 40, 10, 0.005, 0.95, 0, 0.01, 40, "max_samples"},
    {"noise reaches the budget", 2, noisy, 7, 10, 1000, 2, 0.005, 0.95, 0.5, 0.25, 8, "budget"},
    {"max_samples wins over the budget", 1, noisy, 7, 10, 8, 2, 0.005, 0.95, 0, 0.25, 8, "max_samples"},
    {"no target_ci: only the caps", 1, flat, 1, 10, 30, 10, 0, 0.95, 0, 0.01, 30, "max_samples"},
    {"a slow candidate is hopeless at 6", 2, slow, 3, 10, 1000, 10, 0.005, 0.95, 0.5, 0.01, 6, "hopeless"},
    {"hopeless needs a baseline", 1, slow, 3, 10, 25, 10, 0.0001, 0.95, 0.5, 0.01, 25, "max_samples"},
    {"hopeless 0 is off", 2, slow, 3, 10, 25, 10, 0.0001, 0.95, 0, 0.01, 25, "max_samples"},
    {"max_samples wins over hopeless", 2, slow, 3, 6, 6, 10, 0.0001, 0.95, 0.5, 0.01, 6, "max_samples"},
    {"the budget wins over hopeless", 2, slow, 3, 6, 100, 0.06, 0.0001, 0.95, 0.5, 0.01, 6, "budget"},
    {"convergence wins over hopeless", 2, slow_flat, 1, 6, 1000, 10, 0.005, 0.95, 0.5, 0.01, 6, "converged"},
    {"half speed is not hopeless below 0.5", 2, near_half, 5, 10, 60, 10, 0.0005, 0.95, 0.5, 0.01, 60,
     "max_samples"},
    {"half speed is hopeless below 0.6", 2, near_half, 5, 10, 60, 10, 0.0005, 0.95, 0.6, 0.01, 6, "hopeless"},
    {"a stricter confidence decides later", 2, near_half, 5, 10, 60, 10, 0.0005, 0.999, 0.6, 0.01, 11,
     "hopeless"},
};
#define NSCENARIOS (sizeof scenarios / sizeof scenarios[0])

/* ---- the reference: the decision as measure_n made it ---- */

static const char *old_round(const scenario *sc, double *const sorted[2], const size_t n[2], double el)
{
    stats_stop_rule rule = {
        .min_samples = sc->min_samples,
        .max_samples = sc->max_samples,
        .budget_s = sc->budget_s,
        .target_rel_hw = sc->target_ci,
        .confidence = sc->confidence,
    };
    int check_failed_ = 0; /* (check_failed in measure_n) */
    size_t nt = sc->nt;
    stats_stop all = STATS_STOP_CONVERGED;
    for (size_t i = 0; i < nt; i++) {
        stats_stop w = stats_should_stop(&rule, sorted[i], n[i], el, NULL);
        if (w == STATS_CONTINUE) {
            all = STATS_CONTINUE;
            break;
        }
        if (w != STATS_STOP_CONVERGED)
            all = w;
    }
    if (all == STATS_CONTINUE && nt == 2 && !check_failed_ &&
        stats_speedup_hopeless(sorted[0], n[0], sorted[1], n[1], sc->confidence, sc->hopeless))
        all = STATS_STOP_HOPELESS;
    return all == STATS_CONTINUE ? NULL : stats_stop_name(all);
}

/* ---- replaying a scenario ---- */

typedef const char *(*decide_fn)(const scenario *sc, double *const sorted[2], const size_t n[2], double el);

/* Replays sc round by round with `decide` until it says stop; *rounds gets
 * the number of rounds taken. Returns the reason. */
static const char *replay(const scenario *sc, decide_fn decide, size_t *rounds)
{
    double *sorted[2] = {calloc(sc->max_samples + 1, sizeof(double)),
                         calloc(sc->max_samples + 1, sizeof(double))};
    size_t n[2] = {0, 0};
    const char *why = NULL;
    size_t k = 0;
    while (!why && k < sc->max_samples + 1) {
        for (size_t i = 0; i < sc->nt; i++) {
            stats_insert_sorted(sorted[i], n[i], sc->sample((int)i, k, sc->seed));
            n[i]++;
        }
        k++;
        why = decide(sc, sorted, n, (double)k * sc->dt);
    }
    free(sorted[0]);
    free(sorted[1]);
    *rounds = k;
    return why ? why : "never";
}

/* ---- the rules: the scenario's options as measure_n passes them ---- */

static int rules_refused;

static void scenario_rules(const scenario *sc, stop_list *l)
{
    ks_status st;
    memset(l, 0, sizeof *l);
    if (stop_list_set(l, "converged", "target_ci", sc->target_ci, &st) ||
        stop_list_set(l, "converged", "min_samples", (double)sc->min_samples, &st) ||
        stop_list_set(l, "hopeless", "threshold", sc->hopeless, &st))
        rules_refused++;
}

static const stop_choice *last_by;

static const char *new_round(const scenario *sc, double *const sorted[2], const size_t n[2], double el)
{
    stop_list l;
    scenario_rules(sc, &l);
    stop_limits lim = {sc->max_samples, sc->budget_s};
    stop_view v = {sc->nt, {sorted[0], sorted[1]}, {n[0], n[1]}, el, sc->confidence};
    return stop_decide(&l, &lim, &v, &last_by);
}

static void test_scenarios(void)
{
    for (size_t s = 0; s < NSCENARIOS; s++) {
        const scenario *sc = &scenarios[s];
        size_t k = 0, k2 = 0;
        const char *why = replay(sc, old_round, &k);
        CHECKF(k == sc->want_n && strcmp(why, sc->want_reason) == 0, "%s: the reference stopped after %zu (%s)",
               sc->what, k, why);
        last_by = NULL;
        const char *why2 = replay(sc, new_round, &k2);
        CHECKF(k2 == sc->want_n && strcmp(why2, sc->want_reason) == 0, "%s: the rules stopped after %zu (%s)",
               sc->what, k2, why2);
        /* The choice that stopped it is recorded with its parameters; a
         * limit is no rule. */
        int by_rule = !strcmp(why2, "converged") || !strcmp(why2, "hopeless");
        CHECKF(by_rule ? last_by && !strcmp(last_by->rule->name, why2) : last_by == NULL, "%s: stopped by %s",
               sc->what, last_by ? last_by->rule->name : "a limit");
        if (last_by && !strcmp(why2, "hopeless"))
            CHECK(stop_choice_get(last_by, "threshold") == sc->hopeless);
    }
}

/* Random options and sequences: the rules decide as the reference did. */
static void test_against_reference(void)
{
    static double (*const gens[])(int, size_t, uint64_t) = {flat, noisy, slow, near_half, slow_flat};
    static const double cis[] = {0, 0.001, 0.005, 0.02}, confs[] = {0.9, 0.95, 0.99},
                        hopeless[] = {0, 0.3, 0.5, 0.6, 1.0}, budgets[] = {0, 0.05, 0.3, 2};
    int same = 0, total = 0, reasons[4] = {0};
    for (uint64_t s = 1; s <= 400; s++) {
        scenario sc;
        memset(&sc, 0, sizeof sc);
        sc.what = "random";
        sc.nt = 1 + (size_t)(unit(s, 9, 0) * 2);
        sc.sample = gens[(size_t)(unit(s, 9, 1) * 5)];
        sc.seed = s;
        sc.max_samples = 1 + (size_t)(unit(s, 9, 2) * 80);
        sc.min_samples = (size_t)(unit(s, 9, 3) * 21);
        if (sc.min_samples > sc.max_samples)
            sc.min_samples = sc.max_samples;
        sc.budget_s = budgets[(size_t)(unit(s, 9, 4) * 4)];
        sc.target_ci = cis[(size_t)(unit(s, 9, 5) * 4)];
        sc.confidence = confs[(size_t)(unit(s, 9, 6) * 3)];
        sc.hopeless = hopeless[(size_t)(unit(s, 9, 7) * 5)];
        sc.dt = 0.001 + 0.02 * unit(s, 9, 8);
        size_t k = 0, k2 = 0;
        const char *a = replay(&sc, old_round, &k), *b = replay(&sc, new_round, &k2);
        total++;
        reasons[!strcmp(a, "converged") ? 0 : !strcmp(a, "max_samples") ? 1 : !strcmp(a, "budget") ? 2 : 3]++;
        if (k == k2 && !strcmp(a, b))
            same++;
        else
            fprintf(stderr, "seed %llu: reference %zu %s, rules %zu %s\n", (unsigned long long)s, k, a, k2, b);
    }
    CHECKF(same == total, "%d of %d random measurements stop alike", same, total);
    CHECK(rules_refused == 0);
    /* The draw reaches every reason. */
    CHECKF(reasons[0] > 20 && reasons[1] > 20 && reasons[2] > 20 && reasons[3] > 20,
           "converged %d, max_samples %d, budget %d, hopeless %d", reasons[0], reasons[1], reasons[2], reasons[3]);
}

/* The registry, choosing by name, parameters and their checks. */
static void test_choosing(void)
{
    ks_status st;
    stop_list l;
    memset(&l, 0, sizeof l);
    CHECK(stop_rule_find("converged") == stop_rule_at(0) && stop_rule_find("hopeless") != NULL);
    CHECK(stop_rule_find("entropy") == NULL && stop_rule_find(NULL) == NULL);
    size_t nrules = 0;
    while (stop_rule_at(nrules))
        nrules++;
    CHECK(nrules == 3);
    for (size_t i = 0; i < nrules; i++) {
        const stop_rule *r = stop_rule_at(i);
        CHECK(r->name && r->about && r->should_stop && r->nparams <= STOP_MAX_PARAMS);
    }

    CHECK(stop_list_add(&l, "entropy", NULL, &st) == KS_EINVAL);
    CHECKF(strstr(st.msg, "unknown stopping rule \"entropy\"") && strstr(st.msg, "converged, hopeless, hopeless_from_correctness"), "%s",
           st.msg);
    stop_choice *c = NULL, *again = NULL;
    CHECK(stop_list_add(&l, "hopeless", &c, &st) == KS_OK && l.n == 1);
    CHECK(stop_choice_get(c, "threshold") == 0.5); /* its default */
    CHECK(stop_list_add(&l, "hopeless", &again, &st) == KS_OK && again == c && l.n == 1);
    CHECK(isnan(stop_choice_get(c, "target_ci")));
    CHECK(stop_choice_set(c, "thresold", 0.4, &st) == KS_EINVAL);
    CHECKF(strstr(st.msg, "has no parameter \"thresold\" (it has threshold)") != NULL, "%s", st.msg);
    CHECK(stop_choice_set(c, "threshold", -1, &st) == KS_EINVAL);
    CHECK(stop_choice_set(c, "threshold", NAN, &st) == KS_EINVAL);
    CHECK(stop_choice_set(c, "threshold", 0.25, &st) == KS_OK && c->param[0] == 0.25);
    char d[80];
    stop_choice_describe(c, d, sizeof d);
    CHECKF(strcmp(d, "hopeless(threshold=0.25)") == 0, "%s", d);

    CHECK(stop_list_set(&l, "converged", "min_samples", 10.5, &st) == KS_EINVAL);
    CHECK(strstr(st.msg, "whole number") != NULL);
    CHECK(stop_list_set(&l, "converged", "min_samples", 50, &st) == KS_OK && l.n == 2);
    stop_choice_describe(&l.v[1], d, sizeof d);
    CHECKF(strcmp(d, "converged(target_ci=0.005, min_samples=50)") == 0, "%s", d);
    CHECK(stop_list_check(&l, 50, &st) == KS_OK);
    CHECK(stop_list_check(&l, 49, &st) == KS_EINVAL);
    CHECKF(strcmp(st.msg, "timing: min_samples 50 exceeds max_samples 49") == 0, "%s", st.msg);

    /* Order of asking: a rule ranked before the limits wins over them
     * whatever its place in the list; one ranked after loses to them. */
    double flat10[10] = {10, 10, 10, 10, 10, 10, 10, 10, 10, 10}, slow10[10];
    for (int i = 0; i < 10; i++)
        slow10[i] = 100;
    stop_list both;
    memset(&both, 0, sizeof both);
    CHECK(stop_list_set(&both, "hopeless", "threshold", 0.5, &st) == KS_OK);
    CHECK(stop_list_set(&both, "converged", "min_samples", 6, &st) == KS_OK);
    stop_view v = {2, {slow10, flat10}, {10, 10}, 0.0, 0.95};
    stop_limits none = {0, 0}, cap = {10, 0};
    const stop_choice *by = NULL;
    CHECK(strcmp(stop_decide(&both, &none, &v, &by), "converged") == 0 && by == &both.v[1]);
    CHECK(strcmp(stop_decide(&both, &cap, &v, &by), "converged") == 0);
    both.v[1].param[0] = 0; /* never converged */
    CHECK(strcmp(stop_decide(&both, &cap, &v, &by), "max_samples") == 0 && by == NULL);
    CHECK(strcmp(stop_decide(&both, &none, &v, &by), "hopeless") == 0 && by == &both.v[0]);
    stop_list empty = {0};
    CHECK(stop_decide(&empty, &none, &v, &by) == NULL && by == NULL);
}

/* The decision from the correctness runs: the candidate's few timed
 * correctness runs (one per trial and the determinism run) against the
 * baseline's samples the worker keeps, asked once through stop_decide with
 * no limits, as the correctness stage asks (docs/timing.md). */
static const char *from_correctness(const double *cand, size_t nc, const double *base, size_t nb, double threshold,
                                    const stop_choice **by)
{
    ks_status st;
    stop_list l;
    memset(&l, 0, sizeof l);
    CHECK(stop_list_set(&l, "hopeless_from_correctness", "threshold", threshold, &st) == KS_OK);
    double c[64], b[64];
    for (size_t i = 0; i < nc; i++)
        stats_insert_sorted(c, i, cand[i]);
    for (size_t i = 0; i < nb; i++)
        stats_insert_sorted(b, i, base[i]);
    stop_limits none = {0, 0};
    stop_view v = {2, {c, b}, {nc, nb}, 0.0, 0.95};
    /* *by points into the list: it must outlive this call. */
    static stop_list kept;
    kept = l;
    return stop_decide(&kept, &none, &v, by);
}

static void test_from_correctness(void)
{
    /* Eight correctness runs of a candidate near 400 us (the slowest run
     * first: a cold one) and twenty samples of a baseline near 100 us. */
    double slow[8] = {455, 401, 398, 404, 399, 402, 400, 403};
    double base[20];
    for (int i = 0; i < 20; i++)
        base[i] = 100 + (i % 5) * 0.5;
    const stop_choice *by = NULL;
    const char *why = from_correctness(slow, 8, base, 20, 0.5, &by);
    CHECKF(why && strcmp(why, "hopeless_from_correctness") == 0, "a 4x slower candidate: %s", why ? why : "go on");
    CHECK(by && by->rule == stop_rule_find("hopeless_from_correctness") && stop_choice_get(by, "threshold") == 0.5);

    /* Within the threshold's reach: its bound is above 0.5, nothing decided
     * and the timing stage runs. */
    double near[8] = {190, 188, 192, 189, 191, 190, 187, 193};
    CHECK(from_correctness(near, 8, base, 20, 0.5, &by) == NULL && by == NULL);
    /* The same runs decide against a higher threshold. */
    why = from_correctness(near, 8, base, 20, 0.6, &by);
    CHECK(why && strcmp(why, "hopeless_from_correctness") == 0);

    /* A fast candidate is never decided. */
    double fast[8] = {50, 51, 49, 50, 52, 50, 51, 50};
    CHECK(from_correctness(fast, 8, base, 20, 0.5, &by) == NULL);

    /* Fewer than 6 runs of either side decide nothing, however slow. */
    CHECK(from_correctness(slow, 5, base, 20, 0.5, &by) == NULL);
    CHECK(from_correctness(slow, 6, base, 5, 0.5, &by) == NULL);
    CHECK(from_correctness(slow, 6, base, 6, 0.5, &by) != NULL);

    /* One run far below the others (the bound uses the candidate's low end)
     * keeps a near case undecided: the rule errs towards timing. */
    double one_fast[8] = {60, 401, 398, 404, 399, 402, 400, 403};
    CHECK(from_correctness(one_fast, 6, base, 20, 0.5, &by) == NULL);

    /* Threshold 0 never decides. */
    CHECK(from_correctness(slow, 8, base, 20, 0, &by) == NULL);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_prog = argv[0];
    test_scenarios();
    test_against_reference();
    test_choosing();
    test_from_correctness();
    return check_done();
}
