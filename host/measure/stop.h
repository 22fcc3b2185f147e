/*
 * stop.h: when a timing measurement stops sampling (docs/timing.md,
 * "Stopping rules"). Pure functions over samples; no CUDA, no Lua.
 *
 * A stopping rule is an object with a name and parameters (stop_rule),
 * chosen by name with values for its parameters (stop_choice) into a list
 * (stop_list) that the measurement's options carry. After every round (one
 * sample of each target) the timing loop calls stop_decide, which asks in
 * this order:
 *
 *   1. the chosen rules that rank before the limits, in the order chosen:
 *      rules that say the measurement has what it set out to get
 *      ("converged");
 *   2. the limits of the measurement: max_samples, then the time budget;
 *   3. the chosen rules that rank after the limits, in the order chosen:
 *      rules that cut short a measurement that would otherwise go on
 *      ("hopeless").
 *
 * The first that says stop gives the reason: the rule's name,
 * "max_samples" or "budget". With two targets a limit holds when it holds
 * for both (their counts are always equal).
 *
 * A rule reads samples through a stop_view and nothing else, so the same
 * rule can be asked about samples taken anywhere: a decision from samples
 * taken before the timing loop (the correctness runs' durations against a
 * kept baseline) is stop_decide over a view built from them.
 *
 * A new rule is one file, host/measure/stop_<name>.c, defining a const
 * stop_rule, and one row in the registry in host/measure/stop.c.
 */
#ifndef KLAB_HOST_STOP_H
#define KLAB_HOST_STOP_H

#include <stddef.h>

#include "base/status.h"

#define STOP_MAX_PARAMS 4
#define STOP_MAX_RULES 4

/* What a rule sees: each target's samples so far, sorted. */
typedef struct stop_view {
    size_t ntargets;            /* 1, or 2: [0] the candidate, [1] the baseline */
    const double *sorted[2];    /* ascending */
    size_t n[2];
    double elapsed_s;           /* sampling time so far (the budget's clock) */
    double confidence;          /* the measurement's, for every interval (e.g. 0.95) */
} stop_view;

typedef enum {
    STOP_BEFORE_LIMITS = 0,     /* asked before max_samples and the budget */
    STOP_AFTER_LIMITS = 1       /* asked after them */
} stop_rank;

typedef struct stop_param {
    const char *name;
    double dflt;
    double min, max;            /* the values allowed, inclusive */
    int integer;                /* 1: whole numbers only */
    const char *about;          /* one line */
} stop_param;

typedef struct stop_rule {
    const char *name;           /* how it is chosen, and the stop reason it gives */
    const char *about;          /* one line */
    stop_rank rank;
    int nparams;
    const stop_param *params;
    /* Optional: checks the parameter values against the measurement's
     * max_samples, beyond each one's range. KS_OK or KS_EINVAL. */
    int (*check)(const double *param, size_t max_samples, ks_status *st);
    /* 1 when sampling should stop now. */
    int (*should_stop)(const double *param, const stop_view *v);
} stop_rule;

typedef struct stop_choice {
    const stop_rule *rule;
    double param[STOP_MAX_PARAMS];  /* in the order of rule->params */
} stop_choice;

typedef struct stop_list {
    stop_choice v[STOP_MAX_RULES];
    size_t n;
} stop_list;

typedef struct stop_limits {
    size_t max_samples;         /* 0: none */
    double budget_s;            /* <= 0: none */
} stop_limits;

/* The hopeless rule's test (stop_hopeless.c; param[0] its threshold), for
 * a rule that asks it of samples taken elsewhere
 * (stop_hopeless_from_correctness.c). */
int stop_hopeless_should_stop(const double *param, const stop_view *v);

/* The registry: the rule of that name (NULL when none), and the i-th rule
 * (NULL past the last). */
const stop_rule *stop_rule_find(const char *name);
const stop_rule *stop_rule_at(size_t i);

/* Chooses rule `name` with its default parameters (the choice already in l
 * when it is there); *out (may be NULL) gets it. KS_EINVAL for an unknown
 * name, naming the known ones, or a full list. */
int stop_list_add(stop_list *l, const char *name, stop_choice **out, ks_status *st);

/* Sets a parameter of a choice. KS_EINVAL for a name the rule does not
 * have (naming those it has) or a value outside its range. */
int stop_choice_set(stop_choice *c, const char *param, double v, ks_status *st);

/* stop_list_add, then stop_choice_set. */
int stop_list_set(stop_list *l, const char *rule, const char *param, double v, ks_status *st);

/* The rules' own checks of their values against max_samples. */
int stop_list_check(const stop_list *l, size_t max_samples, ks_status *st);

/* The value of a choice's parameter (NaN when the rule has none of that
 * name). */
double stop_choice_get(const stop_choice *c, const char *param);

/* "hopeless(threshold=0.5)" into buf (n bytes). */
void stop_choice_describe(const stop_choice *c, char *buf, size_t n);

/* The decision after a round (the order above): NULL to go on, else the
 * reason. *by (may be NULL) gets the choice that stopped it, NULL when a
 * limit did. */
const char *stop_decide(const stop_list *l, const stop_limits *lim, const stop_view *v,
                        const stop_choice **by);

#endif
