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
 * is checked against it as well as against its expected outcome.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "measure/stats.h"

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

static void test_reference(void)
{
    for (size_t s = 0; s < NSCENARIOS; s++) {
        const scenario *sc = &scenarios[s];
        size_t k = 0;
        const char *why = replay(sc, old_round, &k);
        CHECKF(k == sc->want_n && strcmp(why, sc->want_reason) == 0, "%s: the reference stopped after %zu (%s)",
               sc->what, k, why);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    check_prog = argv[0];
    test_reference();
    return check_done();
}
