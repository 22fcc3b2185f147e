/*
 * stop_hopeless_from_correctness.c: the stopping rule
 * "hopeless_from_correctness": the candidate's correctness runs, each timed
 * like a timed sample (L2 flushed before it, CUPTI activity of its own
 * launches), against the baseline's samples the worker keeps for the task
 * variant and the card, decide its speedup below the threshold (host/stats's
 * one-sided upper bound, from 6 samples of each, below it), so the timing
 * stage need not run at all (docs/timing.md, "Decided from the correctness
 * runs"). The test is the hopeless rule's; the name says where the samples
 * came from, and the result records it. It ranks after the limits: it only
 * ever cuts a measurement short.
 */
#include "measure/stop.h"

#include <math.h>

enum { THRESHOLD };

static const stop_param params[] = {
    [THRESHOLD] = {"threshold", 0.5, 0, INFINITY, 0,
                   "no timing stage once the speedup is decided below this (0: never)"},
};

const stop_rule stop_hopeless_from_correctness = {
    .name = "hopeless_from_correctness",
    .about = "the correctness runs decide the speedup below threshold against the kept baseline",
    .rank = STOP_AFTER_LIMITS,
    .nparams = 1,
    .params = params,
    /* The hopeless rule's own test: one implementation. */
    .should_stop = stop_hopeless_should_stop,
};
