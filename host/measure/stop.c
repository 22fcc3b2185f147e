/*
 * stop.c: the registry of stopping rules, choosing them, and the decision
 * after a round (see stop.h).
 */
#include "measure/stop.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "measure/stats.h"

/* ---- the registry: one row per rule, each defined in stop_<name>.c ---- */

extern const stop_rule stop_converged;
extern const stop_rule stop_hopeless;
extern const stop_rule stop_hopeless_from_correctness;

static const stop_rule *const registry[] = {
    &stop_converged,
    &stop_hopeless,
    &stop_hopeless_from_correctness,
};

#define NRULES (sizeof registry / sizeof registry[0])

const stop_rule *stop_rule_at(size_t i)
{
    return i < NRULES ? registry[i] : NULL;
}

const stop_rule *stop_rule_find(const char *name)
{
    for (size_t i = 0; name && i < NRULES; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

/* ---- choosing ---- */

int stop_list_add(stop_list *l, const char *name, stop_choice **out, ks_status *st)
{
    const stop_rule *r = stop_rule_find(name);
    if (!r) {
        char known[200] = "";
        for (size_t i = 0; i < NRULES; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                     registry[i]->name);
        return ks_fail(st, KS_EINVAL, 0, "timing: unknown stopping rule \"%.40s\" (the rules are %s)",
                       name ? name : "", known);
    }
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].rule == r) {
            if (out)
                *out = &l->v[i];
            return KS_OK;
        }
    if (l->n >= STOP_MAX_RULES)
        return ks_fail(st, KS_EINVAL, 0, "timing: at most %d stopping rules", STOP_MAX_RULES);
    stop_choice *c = &l->v[l->n++];
    memset(c, 0, sizeof *c);
    c->rule = r;
    for (int k = 0; k < r->nparams; k++)
        c->param[k] = r->params[k].dflt;
    if (out)
        *out = c;
    return KS_OK;
}

static int param_index(const stop_rule *r, const char *name)
{
    for (int k = 0; name && k < r->nparams; k++)
        if (strcmp(r->params[k].name, name) == 0)
            return k;
    return -1;
}

int stop_choice_set(stop_choice *c, const char *param, double v, ks_status *st)
{
    const stop_rule *r = c->rule;
    int k = param_index(r, param);
    if (k < 0) {
        char known[200] = "";
        for (int i = 0; i < r->nparams; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                     r->params[i].name);
        return ks_fail(st, KS_EINVAL, 0, "timing: the stopping rule %s has no parameter \"%.40s\" (it has %s)",
                       r->name, param ? param : "", known[0] ? known : "none");
    }
    const stop_param *p = &r->params[k];
    if (!(v >= p->min && v <= p->max) || (p->integer && v != floor(v)))
        return ks_fail(st, KS_EINVAL, 0, "timing: %s's %s must be %s in %g..%g, got %g", r->name, p->name,
                       p->integer ? "a whole number" : "a number", p->min, p->max, v);
    c->param[k] = v;
    return KS_OK;
}

int stop_list_set(stop_list *l, const char *rule, const char *param, double v, ks_status *st)
{
    stop_choice *c = NULL;
    if (stop_list_add(l, rule, &c, st))
        return st->code;
    return stop_choice_set(c, param, v, st);
}

int stop_list_check(const stop_list *l, size_t max_samples, ks_status *st)
{
    for (size_t i = 0; i < l->n; i++) {
        const stop_choice *c = &l->v[i];
        if (!c->rule)
            return ks_fail(st, KS_EINVAL, 0, "timing: stopping rule %zu is not chosen", i + 1);
        if (c->rule->check && c->rule->check(c->param, max_samples, st))
            return st->code;
    }
    return KS_OK;
}

double stop_choice_get(const stop_choice *c, const char *param)
{
    int k = param_index(c->rule, param);
    return k < 0 ? NAN : c->param[k];
}

void stop_choice_describe(const stop_choice *c, char *buf, size_t n)
{
    if (!n)
        return;
    int w = snprintf(buf, n, "%s(", c->rule->name);
    for (int k = 0; k < c->rule->nparams && w > 0 && (size_t)w < n; k++)
        w += snprintf(buf + w, n - (size_t)w, "%s%s=%g", k ? ", " : "", c->rule->params[k].name, c->param[k]);
    if (w > 0 && (size_t)w < n)
        snprintf(buf + w, n - (size_t)w, ")");
}

/* ---- the decision ---- */

/* The first chosen rule of this rank that says stop. */
static const stop_choice *ask(const stop_list *l, stop_rank rank, const stop_view *v)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].rule->rank == rank && l->v[i].rule->should_stop(l->v[i].param, v))
            return &l->v[i];
    return NULL;
}

/* "max_samples" or "budget" when it holds for every target, else NULL:
 * host/stats's caps (no convergence target). */
static const char *limit(const stop_limits *lim, const stop_view *v)
{
    stats_stop_rule caps = {.max_samples = lim->max_samples, .budget_s = lim->budget_s};
    stats_stop all = STATS_CONTINUE;
    for (size_t i = 0; i < v->ntargets; i++) {
        all = stats_should_stop(&caps, v->sorted[i], v->n[i], v->elapsed_s, NULL);
        if (all == STATS_CONTINUE)
            return NULL;
    }
    return all == STATS_CONTINUE ? NULL : stats_stop_name(all);
}

const char *stop_decide(const stop_list *l, const stop_limits *lim, const stop_view *v,
                        const stop_choice **by)
{
    const stop_choice *c = ask(l, STOP_BEFORE_LIMITS, v);
    const char *why = c ? c->rule->name : limit(lim, v);
    if (!why && (c = ask(l, STOP_AFTER_LIMITS, v)) != NULL)
        why = c->rule->name;
    if (by)
        *by = c;
    return why;
}
