/*
 * stats.h: the statistics of timing samples. Pure functions, no state, no
 * allocation except where stated; no CUDA, no Lua.
 *
 * Definitions (docs/timing.md repeats them):
 *   - percentile p (0..100) of n sorted values x[0..n-1]: linear
 *     interpolation between closest ranks, h = (n-1)*p/100,
 *     x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h]) (R's type 7,
 *     numpy's default). The median is the 50th percentile (the mean of the two
 *     middle values when n is even).
 *   - confidence interval of the median: distribution-free, from order
 *     statistics. With B ~ Binomial(n, 1/2), the interval [x(l), x(n+1-l)]
 *     (1-based order statistics) covers the true median with probability
 *     1 - 2 P(B <= l-1). l is the largest rank whose coverage is at least the
 *     requested confidence. Exact binomial sums up to n = STATS_EXACT_MAX,
 *     the normal approximation with continuity correction above. When no rank
 *     reaches the confidence (n < 6 for 95%), the interval is undefined:
 *     ci_low = -inf, ci_high = +inf, rel_halfwidth = +inf.
 *   - relative half-width: (ci_high - ci_low) / (2 * median).
 */
#ifndef KLAB_HOST_STATS_H
#define KLAB_HOST_STATS_H

#include <stddef.h>

/* Above this many samples the order-statistic ranks come from the normal
 * approximation instead of exact binomial sums. */
#define STATS_EXACT_MAX 5000

typedef struct stats_summary {
    size_t n;
    double median, mean, min, max;
    double p10, p90;
    double stddev;          /* sample standard deviation (n-1); 0 when n < 2 */
    double confidence;      /* of the CI below, e.g. 0.95 */
    double ci_low, ci_high; /* CI of the median (+-inf when undefined) */
    double ci_coverage;     /* exact coverage of the chosen ranks (0 when undefined) */
    double rel_halfwidth;   /* (ci_high - ci_low) / (2 * median); +inf when undefined */
} stats_summary;

/* Sorts x[0..n-1] ascending in place (NaNs last). */
void stats_sort(double *x, size_t n);

/* Inserts v into the sorted array x[0..n-1] (which has room for n+1) and
 * keeps it sorted. O(n). */
void stats_insert_sorted(double *x, size_t n, double v);

/* Percentile p in [0, 100] of sorted x (type 7 above). NaN when n == 0. */
double stats_percentile_sorted(const double *x, size_t n, double p);

/* The median of sorted x. NaN when n == 0. */
double stats_median_sorted(const double *x, size_t n);

/* The arithmetic mean of x (any order). NaN when n == 0. */
double stats_mean(const double *x, size_t n);

/* The 1-based rank l of the lower order statistic of the median CI at the
 * given confidence (0 < confidence < 1): the interval is [x(l), x(n+1-l)].
 * Returns 0 when no rank reaches the confidence. *coverage (may be NULL)
 * receives the coverage of the ranks chosen (0 when l == 0). */
size_t stats_median_ci_rank(size_t n, double confidence, double *coverage);

/* The CI of the median of sorted x: *lo, *hi (+-inf when undefined).
 * Returns the relative half-width (+inf when undefined or the median is 0). */
double stats_median_ci_sorted(const double *x, size_t n, double confidence,
                              double *lo, double *hi);

/* Everything above for sorted x. confidence <= 0 or >= 1 means 0.95. */
void stats_summarize_sorted(const double *x, size_t n, double confidence, stats_summary *s);

/* stats_summarize_sorted on a sorted copy of x (any order). Returns 0, or -1
 * when the copy cannot be allocated (s is then zeroed with n set). */
int stats_summarize(const double *x, size_t n, double confidence, stats_summary *s);

/* ---- the stopping rule ---- */

typedef struct stats_stop_rule {
    size_t min_samples;     /* never stop on convergence before this many */
    size_t max_samples;     /* stop at this many (0: no cap) */
    double budget_s;        /* stop once this much time has passed (<= 0: no cap) */
    double target_rel_hw;   /* converged when rel_halfwidth < this (<= 0: never) */
    double confidence;      /* of the CI; <= 0 or >= 1 means 0.95 */
} stats_stop_rule;

typedef enum {
    STATS_CONTINUE = 0,
    STATS_STOP_CONVERGED = 1,   /* rel. half-width below target, n >= min_samples */
    STATS_STOP_MAX_SAMPLES = 2, /* n reached max_samples */
    STATS_STOP_BUDGET = 3,      /* elapsed_s reached budget_s */
    STATS_STOP_HOPELESS = 4     /* the speedup's interval lies below the threshold */
} stats_stop;

/* Decides whether sampling stops, given sorted samples x[0..n-1] and the
 * time spent so far. Convergence wins over the caps when both hold. The
 * relative half-width is written to *rel_hw (may be NULL). */
stats_stop stats_should_stop(const stats_stop_rule *r, const double *x, size_t n,
                             double elapsed_s, double *rel_hw);

/* ---- a hopeless candidate ---- */

/* Fewest samples of each target before the speedup may be called hopeless. */
#define STATS_HOPELESS_MIN_SAMPLES 6

/* The interval of the speedup b/c (the ratio of the two medians) from
 * sorted candidate samples c[0..nc-1] and baseline samples b[0..nb-1]: each
 * median's distribution-free CI at 1 - (1 - confidence)/2 (so that both
 * hold together with at least `confidence`, Bonferroni), then
 * lo = b_lo / c_hi and hi = b_hi / c_lo. Returns 0, or -1 when either CI is
 * undefined (too few samples; then *lo = 0, *hi = +inf). */
int stats_speedup_ci_sorted(const double *c, size_t nc, const double *b, size_t nb,
                            double confidence, double *lo, double *hi);

/* A one-sided upper bound of the speedup b/c that holds with at least
 * `confidence`: the baseline median's upper end over the candidate median's
 * lower end, each the end of its two-sided interval at `confidence`, so that
 * each one-sided end errs with at most (1 - confidence)/2 and both hold
 * together with at least `confidence` (Bonferroni). With 6 samples each this
 * is b's largest over c's smallest (1 - 2/2^6 >= 0.95). Returns 0, or -1 when
 * undefined (too few samples; then *hi = +inf). */
int stats_speedup_upper_sorted(const double *c, size_t nc, const double *b, size_t nb,
                               double confidence, double *hi);

/* 1 when the speedup is decided to be below `threshold` (> 0): at least
 * STATS_HOPELESS_MIN_SAMPLES of each and the one-sided upper bound above
 * (stats_speedup_upper_sorted) below the threshold. 0 otherwise
 * (threshold <= 0: never). */
int stats_speedup_hopeless(const double *c, size_t nc, const double *b, size_t nb,
                           double confidence, double threshold);

/* "continue", "converged", "max_samples", "budget", "hopeless". */
const char *stats_stop_name(stats_stop s);

#endif
