/*
 * test_stats.c: host/stats with known answers (percentiles by hand, CI
 * ranks from exact binomial sums computed independently) and the stopping
 * rule.
 */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "measure/stats.h"

static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

static void test_order_stats(void)
{
    double x[10] = {7, 3, 10, 1, 5, 9, 2, 8, 6, 4};
    stats_sort(x, 10);
    for (int i = 0; i < 10; i++)
        CHECKF(x[i] == i + 1, "x[%d] = %g", i, x[i]);

    CHECK(stats_median_sorted(x, 10) == 5.5);
    CHECK(stats_median_sorted(x, 9) == 5);
    CHECK(stats_mean(x, 10) == 5.5);
    /* Type 7: h = 9 * 0.1 = 0.9 -> 1 + 0.9 * (2 - 1). */
    CHECK(near(stats_percentile_sorted(x, 10, 10), 1.9, 1e-12));
    CHECK(near(stats_percentile_sorted(x, 10, 90), 9.1, 1e-12));
    CHECK(stats_percentile_sorted(x, 10, 50) == 5.5);
    CHECK(stats_percentile_sorted(x, 10, 0) == 1);
    CHECK(stats_percentile_sorted(x, 10, 100) == 10);
    CHECK(near(stats_percentile_sorted(x, 10, 25), 3.25, 1e-12));
    CHECK(isnan(stats_percentile_sorted(x, 0, 50)));
    CHECK(isnan(stats_median_sorted(x, 0)));
    CHECK(isnan(stats_mean(x, 0)));

    double one = 42;
    CHECK(stats_percentile_sorted(&one, 1, 10) == 42);
    CHECK(stats_median_sorted(&one, 1) == 42);

    /* NaN sorts last, never becomes the minimum. */
    double y[4] = {NAN, 2, 1, 3};
    stats_sort(y, 4);
    CHECK(y[0] == 1 && y[1] == 2 && y[2] == 3 && isnan(y[3]));

    /* Sorted insertion. */
    double z[6] = {1, 3, 5, 7};
    stats_insert_sorted(z, 4, 4);
    CHECK(z[0] == 1 && z[1] == 3 && z[2] == 4 && z[3] == 5 && z[4] == 7);
    stats_insert_sorted(z, 5, 0.5);
    CHECK(z[0] == 0.5 && z[5] == 7);
    double e[1];
    stats_insert_sorted(e, 0, 9);
    CHECK(e[0] == 9);
}

static void test_ci_ranks(void)
{
    /* Exact binomial answers (computed independently with integer
     * arithmetic): n -> (l, coverage) at 95% and 99%. */
    static const struct { size_t n; double conf; size_t l; double cov; } k[] = {
        {5, 0.95, 0, 0},
        {6, 0.95, 1, 0.96875},
        {6, 0.99, 0, 0},
        {10, 0.95, 2, 0.978515625},
        {10, 0.99, 1, 0.998046875},
        {20, 0.95, 6, 0.9586105346679688},
        {100, 0.95, 40, 0.9647997997822952},
        {100, 0.99, 37, 0.9933628794840739},
        {1000, 0.95, 469, 0.9537088026395019},
        {5000, 0.95, 2431, 0.9506841418958282},
        {5000, 0.99, 2409, 0.9903536934752578},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        double cov = -1;
        size_t l = stats_median_ci_rank(k[i].n, k[i].conf, &cov);
        CHECKF(l == k[i].l, "n=%zu conf=%g: l=%zu want %zu", k[i].n, k[i].conf, l, k[i].l);
        CHECKF(near(cov, k[i].cov, 1e-9), "n=%zu: coverage %.12g want %.12g", k[i].n, cov, k[i].cov);
    }
    /* Bad confidence means 95%. */
    CHECK(stats_median_ci_rank(10, 0, NULL) == 2);
    CHECK(stats_median_ci_rank(10, 1.5, NULL) == 2);
    CHECK(stats_median_ci_rank(0, 0.95, NULL) == 0);
    CHECK(stats_median_ci_rank(1, 0.95, NULL) == 0);

    /* The normal approximation (above STATS_EXACT_MAX) joins the exact
     * answers smoothly: exact n=5000 gives 2431; l grows by ~1/2 per sample. */
    double cov = 0;
    size_t l1 = stats_median_ci_rank(STATS_EXACT_MAX + 2, 0.95, &cov);
    CHECKF(l1 >= 2431 && l1 <= 2433, "n=5002 l=%zu", l1);
    CHECKF(cov >= 0.95 && cov < 0.953, "n=5002 coverage %g", cov);
    /* Large n: l ~ n/2 - 1.96 sqrt(n)/2. */
    size_t l2 = stats_median_ci_rank(1000000, 0.95, &cov);
    CHECKF(l2 >= 499019 && l2 <= 499021, "n=1e6 l=%zu", l2);
    CHECKF(cov >= 0.95 && cov < 0.9503, "n=1e6 coverage %.6f", cov);
}

static void test_summary(void)
{
    double x[10] = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
    stats_summary s;
    CHECK(stats_summarize(x, 10, 0.95, &s) == 0);
    CHECK(x[0] == 10); /* the input is not reordered */
    CHECK(s.n == 10);
    CHECK(s.median == 5.5 && s.mean == 5.5 && s.min == 1 && s.max == 10);
    CHECK(near(s.p10, 1.9, 1e-12) && near(s.p90, 9.1, 1e-12));
    CHECK(near(s.stddev, sqrt(55.0 / 6.0), 1e-12));
    /* Ranks 2 and 9 of 10. */
    CHECK(s.ci_low == 2 && s.ci_high == 9);
    CHECK(near(s.rel_halfwidth, 7.0 / 11.0, 1e-12));
    CHECK(near(s.ci_coverage, 0.978515625, 1e-12));
    CHECK(s.confidence == 0.95);

    /* Too few samples: an undefined CI. */
    CHECK(stats_summarize(x, 5, 0.95, &s) == 0);
    CHECK(isinf(s.ci_low) && s.ci_low < 0 && isinf(s.ci_high) && isinf(s.rel_halfwidth));
    CHECK(s.median == 8); /* 10 9 8 7 6 */

    CHECK(stats_summarize(x, 0, 0.95, &s) == 0);
    CHECK(s.n == 0 && isnan(s.median) && isinf(s.rel_halfwidth));

    /* 100 samples 100.0 .. 109.9: the CI is ranks 40 and 61. */
    double y[100];
    for (int i = 0; i < 100; i++)
        y[i] = 100.0 + (double)((i * 37) % 100) / 10.0; /* a permutation of 0..99 */
    CHECK(stats_summarize(y, 100, 0.95, &s) == 0);
    CHECK(near(s.median, 104.95, 1e-9));
    CHECK(near(s.ci_low, 103.9, 1e-9) && near(s.ci_high, 106.0, 1e-9));
    CHECK(near(s.rel_halfwidth, (106.0 - 103.9) / (2 * 104.95), 1e-12));

    /* A zero median gives an infinite relative width, not a division by 0. */
    double zz[10] = {0};
    CHECK(stats_summarize(zz, 10, 0.95, &s) == 0);
    CHECK(isinf(s.rel_halfwidth));
}

static void test_stop_rule(void)
{
    stats_stop_rule r = {.min_samples = 10, .max_samples = 50, .budget_s = 2.0,
                         .target_rel_hw = 0.005, .confidence = 0.95};
    /* Identical samples: the CI has zero width once it exists. */
    double flat[60];
    for (int i = 0; i < 60; i++)
        flat[i] = 10.0;
    double hw = -1;
    CHECK(stats_should_stop(&r, flat, 5, 0.1, &hw) == STATS_CONTINUE);
    CHECK(isinf(hw)); /* n=5: no CI yet */
    /* CI defined from n=6 but min_samples is 10. */
    CHECK(stats_should_stop(&r, flat, 9, 0.1, &hw) == STATS_CONTINUE);
    CHECK(hw == 0);
    CHECK(stats_should_stop(&r, flat, 10, 0.1, &hw) == STATS_STOP_CONVERGED);

    /* Spread samples: 1% steps never converge to 0.5%. */
    double wide[60];
    for (int i = 0; i < 60; i++)
        wide[i] = 100.0 + (double)i;
    stats_sort(wide, 60);
    CHECK(stats_should_stop(&r, wide, 20, 0.1, &hw) == STATS_CONTINUE);
    CHECK(hw > 0.005);
    CHECK(stats_should_stop(&r, wide, 50, 0.1, NULL) == STATS_STOP_MAX_SAMPLES);
    CHECK(stats_should_stop(&r, wide, 20, 2.0, NULL) == STATS_STOP_BUDGET);
    CHECK(stats_should_stop(&r, wide, 20, 1.99, NULL) == STATS_CONTINUE);
    /* Convergence wins over the caps. */
    CHECK(stats_should_stop(&r, flat, 50, 5.0, NULL) == STATS_STOP_CONVERGED);

    /* No caps and no target: never stops. */
    stats_stop_rule open = {0};
    CHECK(stats_should_stop(&open, wide, 60, 1e9, NULL) == STATS_CONTINUE);

    /* A tight cluster with one outlier converges (the median is robust). */
    double t[40];
    for (int i = 0; i < 40; i++)
        t[i] = 50.0 + 0.001 * (double)(i % 7);
    t[3] = 500.0;
    stats_sort(t, 40);
    CHECK(stats_should_stop(&r, t, 40, 0.1, &hw) == STATS_STOP_CONVERGED);
    CHECK(hw < 0.001);

    CHECK(strcmp(stats_stop_name(STATS_STOP_CONVERGED), "converged") == 0);
    CHECK(strcmp(stats_stop_name(STATS_STOP_BUDGET), "budget") == 0);
    CHECK(strcmp(stats_stop_name(STATS_STOP_HOPELESS), "hopeless") == 0);
}

/* The speedup's interval: both medians' intervals at 97.5% (Bonferroni), so
 * it needs 7 samples of each (1 - 2/2^7 >= 0.975, 1 - 2/2^6 is not); its
 * one-sided upper bound needs 6. */
static void test_speedup_interval(void)
{
    double c[20], b[20], lo, hi, top;
    for (int i = 0; i < 20; i++) {
        c[i] = 100.0 + (double)i;  /* candidate 100..119 us */
        b[i] = 10.0 + 0.1 * (double)i; /* baseline 10..11.9 us: about 0.1x */
    }
    CHECK(stats_speedup_ci_sorted(c, 6, b, 6, 0.95, &lo, &hi) == -1);
    CHECK(lo == 0 && isinf(hi));
    CHECK(stats_speedup_ci_sorted(c, 7, b, 7, 0.95, &lo, &hi) == 0);
    /* n = 7 at 97.5%: the interval is [min, max] of each. */
    CHECK(fabs(lo - 10.0 / 106.0) < 1e-12);
    CHECK(fabs(hi - 10.6 / 100.0) < 1e-12);
    CHECK(stats_speedup_ci_sorted(c, 20, b, 20, 0.95, &lo, &hi) == 0);
    double med = stats_median_sorted(b, 20) / stats_median_sorted(c, 20);
    CHECK(lo < med && med < hi);

    /* The one-sided upper bound: each median's 95% interval has at most
     * 2.5% above (below) it, so b's upper end over c's lower end holds with
     * 95%; with 6 samples each it is b's largest over c's smallest. */
    CHECK(stats_speedup_upper_sorted(c, 5, b, 5, 0.95, &hi) == -1 && isinf(hi));
    CHECK(stats_speedup_upper_sorted(c, 6, b, 6, 0.95, &hi) == 0);
    CHECK(fabs(hi - 10.5 / 100.0) < 1e-12);
    CHECK(stats_speedup_upper_sorted(c, 20, b, 20, 0.95, &hi) == 0);
    CHECK(hi > stats_median_sorted(b, 20) / stats_median_sorted(c, 20));
    CHECK(stats_speedup_ci_sorted(c, 20, b, 20, 0.95, &lo, &top) == 0 && hi < top);

    /* Hopeless: decided below 0.5x only with enough samples of each. */
    CHECK(!stats_speedup_hopeless(c, 5, b, 20, 0.95, 0.5));
    CHECK(!stats_speedup_hopeless(c, 20, b, 5, 0.95, 0.5));
    CHECK(stats_speedup_hopeless(c, 6, b, 6, 0.95, 0.5));
    CHECK(!stats_speedup_hopeless(c, 6, b, 6, 0.95, 0.105));
    CHECK(stats_speedup_hopeless(c, 7, b, 7, 0.95, 0.5));
    CHECK(stats_speedup_hopeless(c, 20, b, 20, 0.95, 0.5));
    /* The threshold is below the interval's top: not decided. */
    CHECK(!stats_speedup_hopeless(c, 20, b, 20, 0.95, 0.09));
    CHECK(!stats_speedup_hopeless(c, 20, b, 20, 0.95, 0));

    /* A candidate near the baseline is never hopeless, however many samples. */
    double near[40], base[40];
    for (int i = 0; i < 40; i++) {
        near[i] = 20.0 + 0.01 * (double)i;
        base[i] = 10.0 + 0.01 * (double)i;
    }
    CHECK(stats_speedup_ci_sorted(near, 40, base, 40, 0.95, &lo, &hi) == 0);
    CHECK(hi > 0.5 && lo < 0.5);
    CHECK(!stats_speedup_hopeless(near, 40, base, 40, 0.95, 0.5));
    CHECK(stats_speedup_hopeless(near, 40, base, 40, 0.95, 0.6));
}

int main(int argc, char **argv)
{
    (void)argc;
    check_prog = argv[0];
    test_order_stats();
    test_ci_ranks();
    test_summary();
    test_stop_rule();
    test_speedup_interval();
    return check_done();
}
