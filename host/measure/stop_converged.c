/*
 * stop_converged.c: the stopping rule "converged": every target's median
 * is known to the precision asked (host/stats's relative half-width of its
 * distribution-free interval below target_ci), after min_samples at least.
 */
#include "measure/stop.h"

#include "measure/stats.h"

enum { TARGET_CI, MIN_SAMPLES };

static const stop_param params[] = {
    [TARGET_CI] = {"target_ci", 0.005, 0, 1, 0,
                   "the median's relative CI half-width to reach (0: never converged)"},
    [MIN_SAMPLES] = {"min_samples", 10, 0, 10000000, 1, "never converged before this many samples"},
};

static int check(const double *param, size_t max_samples, ks_status *st)
{
    if ((size_t)param[MIN_SAMPLES] > max_samples)
        return ks_fail(st, KS_EINVAL, 0, "timing: min_samples %zu exceeds max_samples %zu",
                       (size_t)param[MIN_SAMPLES], max_samples);
    return KS_OK;
}

static int should_stop(const double *param, const stop_view *v)
{
    /* host/stats's rule without caps: converged or not. */
    stats_stop_rule r = {
        .min_samples = (size_t)param[MIN_SAMPLES],
        .target_rel_hw = param[TARGET_CI],
        .confidence = v->confidence,
    };
    for (size_t i = 0; i < v->ntargets; i++)
        if (stats_should_stop(&r, v->sorted[i], v->n[i], v->elapsed_s, NULL) != STATS_STOP_CONVERGED)
            return 0;
    return v->ntargets > 0;
}

const stop_rule stop_converged = {
    .name = "converged",
    .about = "every target's median is known to target_ci",
    .rank = STOP_BEFORE_LIMITS,
    .nparams = 2,
    .params = params,
    .check = check,
    .should_stop = should_stop,
};
