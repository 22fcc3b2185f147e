/*
 * stats.c: see stats.h for the definitions.
 */
#include "measure/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    /* NaNs sort last so they never become the minimum. */
    if (isnan(x))
        return isnan(y) ? 0 : 1;
    if (isnan(y))
        return -1;
    return (x > y) - (x < y);
}

void stats_sort(double *x, size_t n)
{
    if (x && n > 1)
        qsort(x, n, sizeof *x, cmp_double);
}

void stats_insert_sorted(double *x, size_t n, double v)
{
    /* Binary search for the first element > v (stable for equal values). */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_double(&x[mid], &v) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(x + lo + 1, x + lo, (n - lo) * sizeof *x);
    x[lo] = v;
}

double stats_percentile_sorted(const double *x, size_t n, double p)
{
    if (n == 0)
        return NAN;
    if (p <= 0)
        return x[0];
    if (p >= 100)
        return x[n - 1];
    double h = (double)(n - 1) * p / 100.0;
    size_t i = (size_t)floor(h);
    if (i >= n - 1)
        return x[n - 1];
    double f = h - (double)i;
    return x[i] + f * (x[i + 1] - x[i]);
}

double stats_median_sorted(const double *x, size_t n)
{
    if (n == 0)
        return NAN;
    if (n % 2)
        return x[n / 2];
    return 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

double stats_mean(const double *x, size_t n)
{
    if (n == 0)
        return NAN;
    /* Kahan summation: samples can be many and of similar size. */
    double s = 0, c = 0;
    for (size_t i = 0; i < n; i++) {
        double y = x[i] - c;
        double t = s + y;
        c = (t - s) - y;
        s = t;
    }
    return s / (double)n;
}

/* The standard normal upper quantile z with P(Z > z) = q (0 < q < 0.5), by
 * bisection on erfc: slow but exact to double precision and needs no table. */
static double normal_upper_quantile(double q)
{
    double lo = 0, hi = 40;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (0.5 * erfc(mid / sqrt(2.0)) > q)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

size_t stats_median_ci_rank(size_t n, double confidence, double *coverage)
{
    if (coverage)
        *coverage = 0;
    if (!(confidence > 0 && confidence < 1))
        confidence = 0.95;
    if (n == 0)
        return 0;
    double alpha2 = (1.0 - confidence) / 2.0; /* allowed mass in each tail */

    if (n > STATS_EXACT_MAX) {
        /* Normal approximation to Binomial(n, 1/2): mean n/2, sd sqrt(n)/2.
         * P(B <= l-1) ~ Phi((l - 1 + 0.5 - n/2) / (sqrt(n)/2)) <= alpha2. */
        double z = normal_upper_quantile(alpha2);
        double lf = floor((double)n / 2.0 - z * sqrt((double)n) / 2.0 + 0.5);
        if (lf < 1)
            return 0;
        size_t l = (size_t)lf;
        if (coverage) {
            double t = ((double)l - 0.5 - (double)n / 2.0) / (sqrt((double)n) / 2.0);
            *coverage = 1.0 - 2.0 * 0.5 * erfc(-t / sqrt(2.0));
        }
        return l;
    }

    /* Exact: accumulate P(B <= k) in log space from k = 0 upwards (0.5^n
     * underflows for large n); the rank is l = k + 1 for the largest k with
     * P(B <= k) <= alpha2. */
    double logp = -(double)n * log(2.0); /* log P(B = 0) */
    double cdf = 0;
    size_t l = 0;
    double tail = 0;
    for (size_t k = 0; k < n / 2 + 1; k++) {
        cdf += exp(logp);
        if (cdf > alpha2 * (1 + 1e-12))
            break;
        l = k + 1;
        tail = cdf;
        logp += log((double)(n - k) / (double)(k + 1));
    }
    /* The interval must have two distinct ends: l <= n+1-l. */
    if (l == 0 || 2 * l > n + 1)
        return 0;
    if (coverage)
        *coverage = 1.0 - 2.0 * tail;
    return l;
}

double stats_median_ci_sorted(const double *x, size_t n, double confidence,
                              double *lo, double *hi)
{
    size_t l = stats_median_ci_rank(n, confidence, NULL);
    if (l == 0) {
        if (lo)
            *lo = -INFINITY;
        if (hi)
            *hi = INFINITY;
        return INFINITY;
    }
    double a = x[l - 1], b = x[n - l];
    if (lo)
        *lo = a;
    if (hi)
        *hi = b;
    double m = stats_median_sorted(x, n);
    if (!(m > 0) && !(m < 0))
        return INFINITY;
    return (b - a) / (2.0 * fabs(m));
}

void stats_summarize_sorted(const double *x, size_t n, double confidence, stats_summary *s)
{
    memset(s, 0, sizeof *s);
    if (!(confidence > 0 && confidence < 1))
        confidence = 0.95;
    s->n = n;
    s->confidence = confidence;
    if (n == 0) {
        s->median = s->mean = s->min = s->max = s->p10 = s->p90 = NAN;
        s->ci_low = -INFINITY;
        s->ci_high = INFINITY;
        s->rel_halfwidth = INFINITY;
        return;
    }
    s->median = stats_median_sorted(x, n);
    s->mean = stats_mean(x, n);
    s->min = x[0];
    s->max = x[n - 1];
    s->p10 = stats_percentile_sorted(x, n, 10);
    s->p90 = stats_percentile_sorted(x, n, 90);
    if (n > 1) {
        double ss = 0;
        for (size_t i = 0; i < n; i++)
            ss += (x[i] - s->mean) * (x[i] - s->mean);
        s->stddev = sqrt(ss / (double)(n - 1));
    }
    stats_median_ci_rank(n, confidence, &s->ci_coverage);
    s->rel_halfwidth = stats_median_ci_sorted(x, n, confidence, &s->ci_low, &s->ci_high);
}

int stats_summarize(const double *x, size_t n, double confidence, stats_summary *s)
{
    if (n == 0) {
        stats_summarize_sorted(x, 0, confidence, s);
        return 0;
    }
    double *c = malloc(n * sizeof *c);
    if (!c) {
        memset(s, 0, sizeof *s);
        s->n = n;
        return -1;
    }
    memcpy(c, x, n * sizeof *c);
    stats_sort(c, n);
    stats_summarize_sorted(c, n, confidence, s);
    free(c);
    return 0;
}

stats_stop stats_should_stop(const stats_stop_rule *r, const double *x, size_t n,
                             double elapsed_s, double *rel_hw)
{
    double hw = n ? stats_median_ci_sorted(x, n, r->confidence, NULL, NULL) : INFINITY;
    if (rel_hw)
        *rel_hw = hw;
    if (n >= r->min_samples && n > 0 && r->target_rel_hw > 0 && hw < r->target_rel_hw)
        return STATS_STOP_CONVERGED;
    if (r->max_samples > 0 && n >= r->max_samples)
        return STATS_STOP_MAX_SAMPLES;
    if (r->budget_s > 0 && elapsed_s >= r->budget_s)
        return STATS_STOP_BUDGET;
    return STATS_CONTINUE;
}

int stats_speedup_ci_sorted(const double *c, size_t nc, const double *b, size_t nb,
                            double confidence, double *lo, double *hi)
{
    if (confidence <= 0 || confidence >= 1)
        confidence = 0.95;
    double each = 1 - (1 - confidence) / 2;
    double clo, chi, blo, bhi;
    *lo = 0;
    *hi = INFINITY;
    if (nc == 0 || nb == 0)
        return -1;
    stats_median_ci_sorted(c, nc, each, &clo, &chi);
    stats_median_ci_sorted(b, nb, each, &blo, &bhi);
    if (!isfinite(clo) || !isfinite(chi) || !isfinite(blo) || !isfinite(bhi) || clo <= 0 || chi <= 0)
        return -1;
    *lo = blo / chi;
    *hi = bhi / clo;
    return 0;
}

int stats_speedup_upper_sorted(const double *c, size_t nc, const double *b, size_t nb,
                               double confidence, double *hi)
{
    if (confidence <= 0 || confidence >= 1)
        confidence = 0.95;
    double clo, chi, blo, bhi;
    *hi = INFINITY;
    if (nc == 0 || nb == 0)
        return -1;
    stats_median_ci_sorted(c, nc, confidence, &clo, &chi);
    stats_median_ci_sorted(b, nb, confidence, &blo, &bhi);
    if (!isfinite(clo) || !isfinite(bhi) || clo <= 0)
        return -1;
    *hi = bhi / clo;
    return 0;
}

int stats_speedup_hopeless(const double *c, size_t nc, const double *b, size_t nb,
                           double confidence, double threshold)
{
    double hi;
    if (threshold <= 0 || nc < STATS_HOPELESS_MIN_SAMPLES || nb < STATS_HOPELESS_MIN_SAMPLES)
        return 0;
    if (stats_speedup_upper_sorted(c, nc, b, nb, confidence, &hi) != 0)
        return 0;
    return hi < threshold;
}

const char *stats_stop_name(stats_stop s)
{
    switch (s) {
    case STATS_CONTINUE: return "continue";
    case STATS_STOP_CONVERGED: return "converged";
    case STATS_STOP_MAX_SAMPLES: return "max_samples";
    case STATS_STOP_BUDGET: return "budget";
    case STATS_STOP_HOPELESS: return "hopeless";
    }
    return "unknown";
}
