/*
 * stop_hopeless.c: the stopping rule "hopeless": with a baseline, the
 * candidate's speedup is decided to be below the threshold (host/stats's
 * one-sided upper bound of the speedup, from 6 samples of each, below it),
 * so more precision would not change its verdict. It ranks after the
 * limits: it only cuts short a measurement that would otherwise go on.
 */
#include "measure/stop.h"

#include <math.h>

#include "measure/stats.h"

enum { THRESHOLD };

static const stop_param params[] = {
    [THRESHOLD] = {"threshold", 0.5, 0, INFINITY, 0, "stop once the speedup is decided below this (0: never)"},
};

int stop_hopeless_should_stop(const double *param, const stop_view *v)
{
    return v->ntargets == 2 && stats_speedup_hopeless(v->sorted[0], v->n[0], v->sorted[1], v->n[1],
                                                      v->confidence, param[THRESHOLD]);
}

const stop_rule stop_hopeless = {
    .name = "hopeless",
    .about = "the candidate's speedup is decided below threshold",
    .rank = STOP_AFTER_LIMITS,
    .nparams = 1,
    .params = params,
    .should_stop = stop_hopeless_should_stop,
};
