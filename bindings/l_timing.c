/*
 * l_timing.c: require "klab.timing", statistics of timing samples and the
 * timing of launches described in Lua (host/measure/stats.h, host/measure/timing.h).
 *
 *   timing.stats(samples [, confidence=0.95])
 *       -> {n=, median=, mean=, min=, max=, p10=, p90=, stddev=, ci_low=, ci_high=,
 *           ci_coverage=, rel_halfwidth=, confidence=}
 *       The CI is the distribution-free CI of the median (order statistics);
 *       with too few samples ci_low/ci_high are -inf/+inf and rel_halfwidth
 *       is +inf. samples is a list of numbers (raises otherwise).
 *   timing.percentile(samples, p)          -> number (type 7 interpolation)
 *   timing.ci_rank(n [, confidence])       -> l, coverage  (interval = ranks l and n+1-l; 0 if none)
 *   timing.should_stop(samples, rule, elapsed_s)
 *       -> "continue" | "converged" | "max_samples" | "budget", rel_halfwidth
 *       rule = {min_samples=10, max_samples=1000, budget_s=10, target_ci=0.005, confidence=0.95}
 *   timing.clock([device=0])               -> mhz, reasons | nil, msg, code   (NVML)
 *   timing.driver()                        -> "580.95.05" | nil, msg, code   (NVML: the display driver's version)
 *
 *   timing.measure(ctx, spec) -> result | nil, msg, code, result
 *       ctx  a klab.gpu Context.
 *       spec = {
 *         runs = {{func=Function, grid=, block=, cluster=, shared=, args=}, ...},
 *                  -- one run = these launches in order, through ctx:launch;
 *                  -- the entries are read again for every run, so a before
 *                  -- hook may change their args (rotate input sets)
 *         run = function() ... return n end,   -- instead of runs: launches with
 *                  -- ctx:launch and returns how many it made (-1: a library call)
 *         flops = n,                           -- per run, for TFLOP/s
 *         baseline = {runs=... | run=..., flops=},  -- optional: timed interleaved
 *         before = function(target, sample) return check end,  -- target 1|2, sample 1..
 *         check = function(target, sample) return ok end,
 *         judge = klab.judge handle (optional: after each flush's memset, a clean buffer of
 *                  flush_bytes is read through L2 with its kernels; kept open by the caller),
 *         flush_bytes=, no_flush=, keep_persisting_l2=false, warmup=3, warmup_s=0.05, max_samples=1000,
 *         budget_s=10, confidence=0.95, method="auto"|"cupti"|"events", peak_tflops=,
 *         stop = {{"converged", target_ci=0.005, min_samples=10}, {"hopeless", threshold=0.5}, ...},
 *                  -- the stopping rules by name, each with its parameters (host/measure/stop.h;
 *                  -- those left out keep their defaults); without stop, the shorthand
 *                  -- min_samples=10, target_ci=0.005 (the "converged" rule) and hopeless=0
 *                  -- (> 0: the "hopeless" rule with that threshold)
 *       }
 *       result = {method=, fallback=, stop_reason=, stop=, wall_s=, warmup=, flush_bytes=,
 *                 l2={persisting_limit=0, persisting_reset=true, read_bytes=} (with a flush),
 *                 launch_checked=, stream_id=, dropped=, speedup=,
 *                 speedup_ci={lo, hi} (both medians' 97.5% intervals; absent when undefined),
 *                 speedup_upper (one-sided upper bound at the confidence, what the hopeless
 *                 rule reads: from 6 samples of each; absent when undefined),
 *                 clock_source=, clock_before_mhz=, clock_after_mhz=,
 *                 throttle_before=, throttle_after=,
 *                 candidate = series, baseline = series,
 *                 seen = {{kind=, name=, stream=, klab_stream=, count=}, ...},
 *                 unexpected = {target=, sample=, why=} | nil}
 *       stop = {rule=, params={name=value, ...}}: the rule that ended sampling
 *                 (stop_reason is its name); absent when a limit, a failed check or a
 *                 failure did
 *       series = stats fields above + {label=, samples={...}, event_samples={...}|nil,
 *                 planned=, checks=, check_failures=, first_failed_sample=,
 *                 tflops=, frac_peak=, event_median=}
 *       Failures: "EREJECT" when unexpected launches were seen (result
 *       attached), "ENODRIVER", "EUNSUPPORTED" (method="cupti" refused), a
 *       launch's own code. An error raised inside run/before/check is
 *       re-raised once the measurement is cleaned up.
 *
 *   timing.session(ctx, spec) -> Session | nil, msg, code
 *       A measurement held open (timing_session_*): spec's judge, flush_bytes,
 *       no_flush, keep_persisting_l2, max_samples (the most runs), confidence and
 *       method as in measure; no warm-up and no stopping rule. The caller keeps
 *       spec.judge open while the session is.
 *   session:run(fn) -> us | nil, msg, code
 *       fn() enqueues one run with ctx:launch and returns the launches it made
 *       (as a measure target's run); it is timed as a sample (the caller's work
 *       since the previous run waited for and its records discarded, persisting
 *       L2 lines reset, the L2 flushed, its launches checked with CUPTI).
 *       "EREJECT" for launches it did not plan: the session takes no more runs.
 *   session:close() -> result (as measure's, one target: the runs are the
 *       candidate's samples) | nil when already closed; __close and __gc close too.
 *   timing.decide(spec, candidate, baseline) -> {stop_reason=, stop=, speedup=,
 *       speedup_ci=, speedup_upper=}
 *       The stopping rules of spec.stop (as measure's, required) asked once, with
 *       no limits, about two lists of samples taken elsewhere (the correctness
 *       runs and a kept baseline): stop_reason and stop name the rule that
 *       decides, absent when none does. spec.confidence (0.95).
 *
 * The launches go through ctx:launch, so on the context's legacy stream
 * (the klab.gpu binding has no streams yet); timing uses the same stream,
 * and CUPTI checks that every kernel ran there. Timing opens its own
 * reference to the device's primary context (the one the Context uses).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lhost.h"
#include "lgpu.h"
#include "driver/cuda.h"
#include "measure/stats.h"
#include "measure/stop.h"
#include "measure/timing.h"


/* ---- samples from Lua ---- */

/* [-0, +1, v] Copies the list of numbers at idx into a new userdata (pushed,
 * so Lua owns the memory) and returns it; raises on a non-number. */
static double *check_samples(lua_State *L, int idx, size_t *n)
{
    luaL_checktype(L, idx, LUA_TTABLE);
    lua_Unsigned len = lua_rawlen(L, idx);
    double *x = lua_newuserdatauv(L, (len ? len : 1) * sizeof *x, 0);
    for (lua_Unsigned i = 0; i < len; i++) {
        lua_rawgeti(L, idx, (lua_Integer)i + 1);
        int isnum;
        x[i] = lua_tonumberx(L, -1, &isnum);
        if (!isnum || lua_type(L, -1) != LUA_TNUMBER)
            luaL_error(L, "samples[%d] must be a number, got %s", (int)(i + 1),
                       luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    *n = (size_t)len;
    return x;
}

static double check_confidence(lua_State *L, int idx)
{
    double c = luaL_optnumber(L, idx, 0.95);
    luaL_argcheck(L, c > 0 && c < 1, idx, "confidence must be in (0, 1)");
    return c;
}

/* [-0, +0, m] Sets the stats fields into the table on top. */
static void set_summary(lua_State *L, const stats_summary *s)
{
    lh_setint(L, "n", (lua_Integer)s->n);
    lh_setnum(L, "median", s->median);
    lh_setnum(L, "mean", s->mean);
    lh_setnum(L, "min", s->min);
    lh_setnum(L, "max", s->max);
    lh_setnum(L, "p10", s->p10);
    lh_setnum(L, "p90", s->p90);
    lh_setnum(L, "stddev", s->stddev);
    lh_setnum(L, "ci_low", s->ci_low);
    lh_setnum(L, "ci_high", s->ci_high);
    lh_setnum(L, "ci_coverage", s->ci_coverage);
    lh_setnum(L, "rel_halfwidth", s->rel_halfwidth);
    lh_setnum(L, "confidence", s->confidence);
}

static int l_stats(lua_State *L)
{
    double conf = check_confidence(L, 2);
    lua_settop(L, 1);
    size_t n;
    double *x = check_samples(L, 1, &n);
    stats_sort(x, n);
    stats_summary s;
    stats_summarize_sorted(x, n, conf, &s);
    lua_createtable(L, 0, 13);
    set_summary(L, &s);
    return 1;
}

static int l_percentile(lua_State *L)
{
    double p = luaL_checknumber(L, 2);
    luaL_argcheck(L, p >= 0 && p <= 100, 2, "percentile must be in [0, 100]");
    lua_settop(L, 1);
    size_t n;
    double *x = check_samples(L, 1, &n);
    stats_sort(x, n);
    lua_pushnumber(L, stats_percentile_sorted(x, n, p));
    return 1;
}

static int l_ci_rank(lua_State *L)
{
    lua_Integer n = luaL_checkinteger(L, 1);
    luaL_argcheck(L, n >= 0, 1, "n must be >= 0");
    double conf = check_confidence(L, 2);
    double cov = 0;
    size_t l = stats_median_ci_rank((size_t)n, conf, &cov);
    lua_pushinteger(L, (lua_Integer)l);
    lua_pushnumber(L, cov);
    return 2;
}

static int l_should_stop(lua_State *L)
{
    luaL_checktype(L, 2, LUA_TTABLE);
    double elapsed = luaL_checknumber(L, 3);
    lua_Integer mins = lh_optintfield(L, 2, "min_samples", 10);
    lua_Integer maxs = lh_optintfield(L, 2, "max_samples", 1000);
    luaL_argcheck(L, mins >= 0 && maxs >= 0, 2, "sample counts must be >= 0");
    stats_stop_rule r = {
        .min_samples = (size_t)mins,
        .max_samples = (size_t)maxs,
        .budget_s = lh_optnumfield(L, 2, "budget_s", 10),
        .target_rel_hw = lh_optnumfield(L, 2, "target_ci", 0.005),
        .confidence = lh_optnumfield(L, 2, "confidence", 0.95),
    };
    luaL_argcheck(L, r.confidence > 0 && r.confidence < 1, 2, "confidence must be in (0, 1)");
    lua_settop(L, 3);
    size_t n;
    double *x = check_samples(L, 1, &n);
    stats_sort(x, n);
    double hw = 0;
    stats_stop s = stats_should_stop(&r, x, n, elapsed, &hw);
    lua_pushstring(L, stats_stop_name(s));
    lua_pushnumber(L, hw);
    return 2;
}

static int l_clock(lua_State *L)
{
    lua_Integer dev = luaL_optinteger(L, 1, 0);
    luaL_argcheck(L, dev >= 0 && dev < 1 << 20, 1, "device ordinal must be >= 0");
    ks_status st;
    ks_clear(&st);
    int mhz = -1;
    unsigned long long reasons = 0;
    if (timing_sm_clock((int)dev, &mhz, &reasons, &st))
        return lh_pushfail(L, &st);
    lua_pushinteger(L, mhz);
    lua_pushinteger(L, (lua_Integer)reasons);
    return 2;
}

static int l_driver(lua_State *L)
{
    ks_status st;
    ks_clear(&st);
    char v[96];
    if (timing_driver_version(v, sizeof v, &st))
        return lh_pushfail(L, &st);
    lua_pushstring(L, v);
    return 1;
}

/* ---- measure: calling back into Lua ---- */

typedef struct lcall {
    lua_State *L;
    int ctx;          /* stack index of the Context */
    int target[2];    /* stack indices of the target tables (spec, spec.baseline) */
    int hooks;        /* stack index of spec (before/check fields) */
    lh_calls calls;   /* the callbacks' handler and the first raise */
} lcall;

static int code_from_name(const char *name)
{
    for (int c = 0; c >= -20; c--)
        if (name && strcmp(ks_code_name(c), name) == 0)
            return c;
    return KS_ECUDA;
}

/* After ctx:launch or a run function returned nil, msg, code: st. */
static int fail_from_lua(lua_State *L, int base, ks_status *st)
{
    const char *msg = lua_tostring(L, base + 1);
    const char *code = lua_tostring(L, base + 2);
    return ks_fail(st, code_from_name(code), 0, "%s", msg ? msg : "launch failed");
}

/* timing_run_fn for a Lua target. */
static int lua_run(void *user, CUstream stream, int *planned, ks_status *st)
{
    (void)stream; /* ctx:launch uses the legacy stream, which is what timing gets */
    lcall *lc = ((lcall **)user)[0];
    int t = (int)(intptr_t)((void **)user)[1];
    lua_State *L = lc->L;
    int top = lua_gettop(L);
    int rc = KS_OK;
    int spec = lc->target[t];
    if (lua_getfield(L, spec, "run") == LUA_TFUNCTION) {
        /* run() -> n, or nil, msg, code like any klab failure. */
        if (lh_call(&lc->calls, 0, 3, st)) {
            rc = st->code;
        } else if (lua_isnil(L, top + 1) && lua_type(L, top + 2) == LUA_TSTRING) {
            rc = fail_from_lua(L, top, st);
        } else {
            int isint;
            lua_Integer n = lua_tointegerx(L, top + 1, &isint);
            if (!isint || lua_type(L, top + 1) != LUA_TNUMBER || n < -1 || n > 1000000)
                rc = ks_fail(st, KS_EINVAL, 0,
                             "run must return the number of launches it made (or -1), got %s",
                             luaL_typename(L, top + 1));
            else
                *planned = (int)n;
        }
        lua_settop(L, top);
        return rc;
    }
    lua_pop(L, 1);
    lua_getfield(L, spec, "runs");
    int runs = lua_gettop(L);
    lua_Integer n = (lua_Integer)lua_rawlen(L, runs);
    for (lua_Integer i = 1; i <= n && rc == KS_OK; i++) {
        int base = lua_gettop(L);
        lua_getfield(L, lc->ctx, "launch");
        lua_pushvalue(L, lc->ctx);
        lua_rawgeti(L, runs, i);
        lua_getfield(L, -1, "func");
        lua_insert(L, -2);             /* launch, ctx, func, entry */
        if (lh_call(&lc->calls, 3, 3, st))
            rc = st->code;
        else if (!lua_toboolean(L, base + 1))
            rc = fail_from_lua(L, base, st);
        lua_settop(L, base);
    }
    *planned = (int)n;
    lua_settop(L, top);
    return rc;
}

static int lua_before(void *hook_user, int target, size_t sample, int *check, ks_status *st)
{
    lcall *lc = hook_user;
    lua_State *L = lc->L;
    int top = lua_gettop(L);
    *check = 0;
    if (lua_getfield(L, lc->hooks, "before") != LUA_TFUNCTION) {
        lua_settop(L, top);
        return KS_OK;
    }
    lua_pushinteger(L, target + 1);
    lua_pushinteger(L, (lua_Integer)sample + 1);
    int rc = lh_call(&lc->calls, 2, 1, st) ? st->code : KS_OK;
    if (rc == KS_OK)
        *check = lua_toboolean(L, -1);
    lua_settop(L, top);
    return rc;
}

static int lua_check(void *hook_user, int target, size_t sample, int *ok, ks_status *st)
{
    lcall *lc = hook_user;
    lua_State *L = lc->L;
    int top = lua_gettop(L);
    *ok = 1;
    if (lua_getfield(L, lc->hooks, "check") != LUA_TFUNCTION) {
        lua_settop(L, top);
        return KS_OK;
    }
    lua_pushinteger(L, target + 1);
    lua_pushinteger(L, (lua_Integer)sample + 1);
    int rc = lh_call(&lc->calls, 2, 1, st) ? st->code : KS_OK;
    if (rc == KS_OK)
        *ok = lua_toboolean(L, -1);
    lua_settop(L, top);
    return rc;
}

/* Raises unless the table at t describes a target (runs list or run fn). */
static void check_target(lua_State *L, int t, const char *what)
{
    int ty = lua_getfield(L, t, "run");
    lua_pop(L, 1);
    if (ty == LUA_TFUNCTION)
        return;
    if (ty != LUA_TNIL)
        luaL_error(L, "%s.run must be a function", what);
    if (lua_getfield(L, t, "runs") != LUA_TTABLE)
        luaL_error(L, "%s needs runs = {{func=, grid=, block=, args=}, ...} or run = function",
                   what);
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    if (n < 1)
        luaL_error(L, "%s.runs must list at least one launch", what);
    for (lua_Integer i = 1; i <= n; i++) {
        if (lua_rawgeti(L, -1, i) != LUA_TTABLE)
            luaL_error(L, "%s.runs[%d] must be a table", what, (int)i);
        if (lua_getfield(L, -1, "func") != LUA_TUSERDATA)
            luaL_error(L, "%s.runs[%d].func must be a klab.gpu Function", what, (int)i);
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
}

/* ---- measure: the result ---- */

static void push_series(lua_State *L, const timing_series *s)
{
    lua_createtable(L, 0, 24);
    set_summary(L, &s->stats);
    lh_setstr(L, "label", s->label);
    lua_createtable(L, (int)s->n, 0);
    for (size_t i = 0; i < s->n; i++) {
        lua_pushnumber(L, s->samples_us[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "samples");
    if (s->event_us) {
        lua_createtable(L, (int)s->n, 0);
        for (size_t i = 0; i < s->n; i++) {
            lua_pushnumber(L, s->event_us[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_setfield(L, -2, "event_samples");
        lh_setnum(L, "event_median", s->event_stats.median);
    }
    lh_setint(L, "planned", s->planned);
    lh_setint(L, "checks", (lua_Integer)s->checks);
    lh_setint(L, "check_failures", (lua_Integer)s->check_failures);
    if (s->first_failed_sample >= 0)
        lh_setint(L, "first_failed_sample", s->first_failed_sample + 1);
    lh_setnum(L, "tflops", s->tflops);
    lh_setnum(L, "frac_peak", s->frac_peak);
}

/* [-0, +0, m] t.stop = {rule=, params={name=value, ...}} for the table on
 * top: the rule that decided, with its parameters. */
static void push_choice(lua_State *L, const stop_choice *c)
{
    const stop_rule *rule = c->rule;
    lua_createtable(L, 0, 2);
    lh_setstr(L, "rule", rule->name);
    lua_createtable(L, 0, rule->nparams);
    for (int k = 0; k < rule->nparams; k++) {
        if (rule->params[k].integer)
            lh_setint(L, rule->params[k].name, (lua_Integer)c->param[k]);
        else
            lh_setnum(L, rule->params[k].name, c->param[k]);
    }
    lua_setfield(L, -2, "params");
    lua_setfield(L, -2, "stop");
}

/* [-0, +0, m] speedup_ci = {lo, hi} and speedup_upper for the table on top,
 * each where it exists. */
static void push_speedup_bounds(lua_State *L, double lo, double hi, double upper)
{
    if (isfinite(hi) && lo > 0) {
        lua_createtable(L, 2, 0);
        lua_pushnumber(L, lo);
        lua_rawseti(L, -2, 1);
        lua_pushnumber(L, hi);
        lua_rawseti(L, -2, 2);
        lua_setfield(L, -2, "speedup_ci");
    }
    if (isfinite(upper) && upper > 0)
        lh_setnum(L, "speedup_upper", upper);
}

static void push_result(lua_State *L, const timing_result *r)
{
    lua_createtable(L, 0, 24);
    lh_setstr(L, "method", timing_method_name(r->method));
    if (r->fallback[0])
        lh_setstr(L, "fallback", r->fallback);
    lh_setstr(L, "stop_reason", r->stop_reason);
    if (r->stopped_by.rule)
        push_choice(L, &r->stopped_by);
    lh_setnum(L, "wall_s", r->wall_s);
    lh_setint(L, "warmup", r->warmup);
    lh_setint(L, "flush_bytes", (lua_Integer)r->flush_bytes);
    if (r->flush_bytes) {
        /* What kept earlier samples' lines out of L2. */
        lua_createtable(L, 0, 2);
        if (r->l2_persisting_limit >= 0)
            lh_setint(L, "persisting_limit", (lua_Integer)r->l2_persisting_limit);
        lua_pushboolean(L, r->l2_reset);
        lua_setfield(L, -2, "persisting_reset");
        if (r->l2_read_bytes)
            lh_setint(L, "read_bytes", (lua_Integer)r->l2_read_bytes);
        lua_setfield(L, -2, "l2");
    }
    lh_setbool(L, "launch_checked", r->launch_checked);
    if (r->launch_checked)
        lh_setint(L, "stream_id", r->stream_id);
    lh_setint(L, "dropped", (lua_Integer)r->dropped);
    if (r->ntargets == 2) {
        lh_setnum(L, "speedup", r->speedup);
        push_speedup_bounds(L, r->speedup_lo, r->speedup_hi, r->speedup_upper);
    }
    lh_setstr(L, "clock_source", r->clock_source);
    if (r->clock_before_mhz >= 0)
        lh_setint(L, "clock_before_mhz", r->clock_before_mhz);
    if (r->clock_after_mhz >= 0)
        lh_setint(L, "clock_after_mhz", r->clock_after_mhz);
    if (strcmp(r->clock_source, "nvml") == 0) {
        lh_setint(L, "throttle_before", (lua_Integer)r->throttle_before);
        lh_setint(L, "throttle_after", (lua_Integer)r->throttle_after);
    }
    push_series(L, &r->t[0]);
    lua_setfield(L, -2, "candidate");
    if (r->ntargets == 2) {
        push_series(L, &r->t[1]);
        lua_setfield(L, -2, "baseline");
    }
    lua_createtable(L, (int)r->nseen, 0);
    for (size_t i = 0; i < r->nseen; i++) {
        const timing_seen *s = &r->seen[i];
        lua_createtable(L, 0, 5);
        lh_setstr(L, "kind", cupti_act_kind_name(s->kind));
        if (s->name[0])
            lh_setstr(L, "name", s->name);
        lh_setint(L, "stream", s->stream_id);
        lh_setbool(L, "klab_stream", s->klab_stream);
        lh_setint(L, "count", (lua_Integer)s->count);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "seen");
    if (r->seen_overflow)
        lh_setint(L, "seen_overflow", (lua_Integer)r->seen_overflow);
    if (r->unexpected) {
        lua_createtable(L, 0, 3);
        lh_setint(L, "target", r->unexpected_target + 1);
        /* Samples count from 1; warm-up runs are negative: -1 is the first. */
        lh_setint(L, "sample", r->unexpected_sample >= 0 ? r->unexpected_sample + 1
                                                       : r->unexpected_sample);
        lh_setstr(L, "why", r->unexpected_why);
        lua_setfield(L, -2, "unexpected");
    }
}

static size_t opt_count(lua_State *L, int t, const char *k, lua_Integer dflt, lua_Integer max)
{
    lua_Integer v = lh_optintfield(L, t, k, dflt);
    if (v < 0 || v > max)
        luaL_error(L, "%s must be in 0..%I", k, max);
    return (size_t)v;
}

/* [-0, +0, v] Sets parameter `param` of rule `rule` in l from the number
 * at the top of the stack (pops it); raises naming `where` otherwise. */
static void set_param(lua_State *L, stop_list *l, const char *rule, const char *param, const char *where)
{
    int isnum;
    lua_Number v = lua_tonumberx(L, -1, &isnum);
    if (!isnum || lua_type(L, -1) != LUA_TNUMBER)
        luaL_error(L, "%s must be a number, got %s", where, luaL_typename(L, -1));
    lua_pop(L, 1);
    ks_status st;
    if (stop_list_set(l, rule, param, v, &st))
        lh_raise(L, &st);
}

/* [-0, +0, v] spec.stop's entry at the top of the stack: {"name", param = value, ...}
 * added to l (popped). */
static void read_rule(lua_State *L, stop_list *l, lua_Integer i)
{
    int e = lua_gettop(L);
    if (lua_type(L, e) != LUA_TTABLE || lua_rawgeti(L, e, 1) != LUA_TSTRING)
        luaL_error(L, "spec.stop[%d] must be {\"rule name\", parameter = value, ...}", (int)i);
    const char *name = lua_tostring(L, -1);
    ks_status st;
    if (stop_list_add(l, name, NULL, &st))
        lh_raise(L, &st);
    lua_pushnil(L);
    while (lua_next(L, e)) {
        if (lua_type(L, -2) == LUA_TNUMBER && lua_tointeger(L, -2) == 1) {
            lua_pop(L, 1);
            continue;
        }
        if (lua_type(L, -2) != LUA_TSTRING)
            luaL_error(L, "spec.stop[%d]: parameters are named (name = value)", (int)i);
        char where[96];
        snprintf(where, sizeof where, "spec.stop[%d].%.40s", (int)i, lua_tostring(L, -2));
        set_param(L, l, name, lua_tostring(L, -2), where);
    }
    lua_settop(L, e - 1);
}

/* [-0, +0, v] The stopping rules of the spec at t into l: spec.stop, or the
 * shorthand fields, which only name the default rules' parameters. */
static void read_stop(lua_State *L, int t, stop_list *l)
{
    static const char *const shorthand[][3] = {
        {"min_samples", "converged", "min_samples"},
        {"target_ci", "converged", "target_ci"},
        {"hopeless", "hopeless", "threshold"},
    };
    memset(l, 0, sizeof *l);
    int ty = lua_getfield(L, t, "stop");
    ks_status st;
    if (ty == LUA_TNIL && stop_list_add(l, "converged", NULL, &st))
        lh_raise(L, &st);
    for (size_t k = 0; k < sizeof shorthand / sizeof shorthand[0]; k++) {
        if (lua_getfield(L, t, shorthand[k][0]) == LUA_TNIL) {
            lua_pop(L, 1);
            continue;
        }
        if (ty != LUA_TNIL)
            luaL_error(L, "spec.%s and spec.stop: give %s's %s in spec.stop", shorthand[k][0], shorthand[k][1],
                       shorthand[k][2]);
        /* hopeless <= 0 never decided anything: no rule. */
        if (!strcmp(shorthand[k][0], "hopeless") && lua_isnumber(L, -1) && lua_tonumber(L, -1) <= 0) {
            lua_pop(L, 1);
            continue;
        }
        set_param(L, l, shorthand[k][1], shorthand[k][2], shorthand[k][0]);
    }
    if (ty == LUA_TTABLE) {
        int list = lua_gettop(L);
        lua_Integer n = (lua_Integer)lua_rawlen(L, list);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, list, i);
            read_rule(L, l, i);
        }
    } else if (ty != LUA_TNIL) {
        luaL_error(L, "spec.stop must be a list of rules, e.g. {{\"converged\", target_ci = 0.005}}");
    }
    lua_pop(L, 1);
}

/* [-0, +0, v] The options of the spec at t (misuse raises before anything
 * reaches the GPU). */
static void read_opts(lua_State *L, int t, timing_opts *o)
{
    timing_opts_default(o);
    o->stream = NULL;
    o->keep_persisting_l2 = lh_optboolfield(L, t, "keep_persisting_l2", 0);
    lua_Integer fb = lh_optintfield(L, t, "flush_bytes", 0);
    if (fb < 0)
        luaL_error(L, "flush_bytes must be >= 0");
    o->flush_bytes = (size_t)fb;
    o->no_flush = lh_optboolfield(L, t, "no_flush", 0);
    if (lua_getfield(L, t, "judge") != LUA_TNIL)
        o->l2_read = lgpu_judge_kernels(L, -1);
    lua_pop(L, 1);
    o->warmup = (int)opt_count(L, t, "warmup", 3, 100000);
    o->warmup_s = lh_optnumfield(L, t, "warmup_s", 0.05);
    o->max_samples = opt_count(L, t, "max_samples", 1000, 10000000);
    o->budget_s = lh_optnumfield(L, t, "budget_s", 10);
    o->confidence = lh_optnumfield(L, t, "confidence", 0.95);
    o->peak_tflops = lh_optnumfield(L, t, "peak_tflops", 0);
    read_stop(L, t, &o->stop);
    const char *method = lh_optstrfield(L, t, "method", "auto");
    o->method = timing_method_parse(method);
    if (o->method < 0)
        luaL_error(L, "method must be \"auto\", \"cupti\" or \"events\", got \"%s\"", method);
    if (!(o->confidence > 0 && o->confidence < 1))
        luaL_error(L, "confidence must be in (0, 1)");
    if (o->max_samples < 1)
        luaL_error(L, "need 1 <= max_samples");
    ks_status st;
    if (stop_list_check(&o->stop, o->max_samples, &st))
        lh_raise(L, &st);
}

static int l_measure(lua_State *L)
{
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    timing_opts o;
    read_opts(L, 2, &o);
    /* The measurement holds its own reference to the device's primary
     * context, so a callback that frees the Context cannot pull it away. */
    int ordinal = cuda_ctx_ordinal(lgpu_check_ctx(L, 1)->ctx);
    check_target(L, 2, "spec");
    int nt = 1;
    if (lua_getfield(L, 2, "baseline") == LUA_TTABLE) {
        check_target(L, 3, "spec.baseline");
        nt = 2;
    } else if (!lua_isnil(L, 3)) {
        return luaL_error(L, "spec.baseline must be a table");
    }
    /* stack: 1 ctx, 2 spec, 3 baseline|nil */
    int ty = lua_getfield(L, 2, "before");
    if (ty != LUA_TNIL && ty != LUA_TFUNCTION)
        return luaL_error(L, "spec.before must be a function");
    ty = lua_getfield(L, 2, "check");
    if (ty != LUA_TNIL && ty != LUA_TFUNCTION)
        return luaL_error(L, "spec.check must be a function");
    int has_hooks = !lua_isnil(L, -1) || !lua_isnil(L, -2);
    lua_settop(L, 3);

    lcall lc = {.L = L, .ctx = 1, .target = {2, 3}, .hooks = 2};
    lh_calls_begin(&lc.calls, L); /* 4, 5 */
    void *u0[2] = {&lc, (void *)(intptr_t)0};
    void *u1[2] = {&lc, (void *)(intptr_t)1};
    timing_target tg[2] = {
        {"candidate", lua_run, u0, lh_optnumfield(L, 2, "flops", 0)},
        {"baseline", lua_run, u1, nt == 2 ? lh_optnumfield(L, 3, "flops", 0) : 0},
    };
    if (has_hooks) {
        o.before = lua_before;
        o.check = lua_check;
        o.hook_user = &lc;
    }

    ks_status st;
    ks_clear(&st);
    cuda_ctx *c = NULL;
    if (cuda_ctx_open(ordinal, &c, &st))
        return lh_pushfail(L, &st);
    timing_result r;
    int rc = nt == 2 ? timing_measure2(c, &tg[0], &tg[1], &o, &r, &st)
                     : timing_measure(c, &tg[0], &o, &r, &st);
    ks_status ignore;
    cuda_ctx_close(c, &ignore);
    if (lc.calls.raised) {
        timing_result_free(&r);
        return lh_reraise(&lc.calls);
    }
    /* Pushing may raise (memory): r's arrays then leak; they are bounded
     * by max_samples and this is an out-of-memory path. */
    if (rc == KS_OK) {
        push_result(L, &r);
        timing_result_free(&r);
        return 1;
    }
    lh_pushfail(L, &st);
    if (!r.unexpected && r.t[0].n == 0) {
        timing_result_free(&r);
        return 3;
    }
    push_result(L, &r);
    timing_result_free(&r);
    return 4;
}

/* ---- a measurement held open ---- */

#define SESSION_T "klab.timing.Session"

typedef struct l_session {
    timing_session *s;      /* NULL once closed */
    l_ctx *ctx;             /* the context userdata (also user value 1) */
} l_session;

/* The one release shared by :close, __close and __gc; r (may be NULL)
 * gets the result. 1 if it closed now. */
static int session_release(l_session *p, timing_result *r)
{
    if (!p->s)
        return 0;
    timing_session *s = p->s;
    p->s = NULL;
    timing_session_close(s, r);
    lgpu_child_release(&p->ctx);
    return 1;
}

static int l_session_open(lua_State *L)
{
    l_ctx *c = lgpu_check_ctx(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    timing_opts o;
    read_opts(L, 2, &o);
    /* Created released: a failure below leaves nothing to free. */
    l_session *p = lgpu_new_child(L, sizeof *p, SESSION_T, 1);
    ks_status st;
    ks_clear(&st);
    timing_session *s = NULL;
    if (timing_session_open(c->ctx, &o, &s, &st))
        return lh_pushfail(L, &st);
    p->s = s;
    lgpu_child_hold(&p->ctx, c);
    return 1;
}

static int session_run(lua_State *L)
{
    l_session *p = luaL_checkudata(L, 1, SESSION_T);
    if (!p->s)
        return luaL_error(L, "attempt to use a closed " SESSION_T);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    lua_createtable(L, 0, 1); /* 3: the target, {run = fn}, as measure's are */
    lua_pushvalue(L, 2);
    lua_setfield(L, 3, "run");
    lcall lc = {.L = L, .ctx = 1, .target = {3, 3}, .hooks = 3};
    lh_calls_begin(&lc.calls, L); /* 4, 5 */
    void *u0[2] = {&lc, (void *)(intptr_t)0};
    timing_target t = {"candidate", lua_run, u0, 0};
    ks_status st;
    ks_clear(&st);
    double us = 0;
    int rc = timing_session_run(p->s, &t, &us, &st);
    if (lc.calls.raised)
        return lh_reraise(&lc.calls);
    if (rc)
        return lh_pushfail(L, &st);
    lua_pushnumber(L, us);
    return 1;
}

static int session_close(lua_State *L)
{
    l_session *p = luaL_checkudata(L, 1, SESSION_T);
    timing_result r;
    if (!session_release(p, &r)) {
        lua_pushnil(L);
        return 1;
    }
    /* Pushing may raise (memory): r's arrays then leak, as in measure. */
    push_result(L, &r);
    timing_result_free(&r);
    return 1;
}

static int session_gc(lua_State *L)
{
    session_release(luaL_checkudata(L, 1, SESSION_T), NULL);
    return 0;
}

static const luaL_Reg session_methods[] = {
    {"run", session_run}, {"close", session_close}, {NULL, NULL},
};

static const luaL_Reg session_meta[] = {
    {"__gc", session_gc}, {"__close", session_gc}, {NULL, NULL},
};

/* ---- a decision from samples taken elsewhere ---- */

/* timing.decide(spec, candidate, baseline): the stopping rules of
 * spec.stop asked once (stop_decide, no limits) about the two lists of
 * samples. */
static int l_decide(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 3);
    if (lua_getfield(L, 1, "stop") != LUA_TTABLE)
        return luaL_error(L, "spec.stop must be a list of rules, e.g. {{\"hopeless_from_correctness\"}}");
    lua_pop(L, 1);
    stop_list l;
    read_stop(L, 1, &l);
    double conf = lh_optnumfield(L, 1, "confidence", 0.95);
    luaL_argcheck(L, conf > 0 && conf < 1, 1, "confidence must be in (0, 1)");
    size_t n[2];
    double *x[2];
    x[0] = check_samples(L, 2, &n[0]); /* 4 */
    x[1] = check_samples(L, 3, &n[1]); /* 5 */
    stats_sort(x[0], n[0]);
    stats_sort(x[1], n[1]);
    stop_limits none = {0, 0};
    stop_view v = {2, {x[0], x[1]}, {n[0], n[1]}, 0.0, conf};
    const stop_choice *by = NULL;
    const char *why = stop_decide(&l, &none, &v, &by);
    lua_createtable(L, 0, 6);
    if (why)
        lh_setstr(L, "stop_reason", why);
    if (by)
        push_choice(L, by);
    double lo = 0, hi = INFINITY, up = INFINITY;
    if (n[0] && n[1]) {
        double cm = stats_percentile_sorted(x[0], n[0], 50), bm = stats_percentile_sorted(x[1], n[1], 50);
        if (cm > 0)
            lh_setnum(L, "speedup", bm / cm);
        stats_speedup_ci_sorted(x[0], n[0], x[1], n[1], conf, &lo, &hi);
        stats_speedup_upper_sorted(x[0], n[0], x[1], n[1], conf, &up);
    }
    push_speedup_bounds(L, lo, hi, up);
    return 1;
}

/* ---- registration ---- */

static const luaL_Reg timing_funcs[] = {
    {"stats", l_stats},
    {"percentile", l_percentile},
    {"ci_rank", l_ci_rank},
    {"should_stop", l_should_stop},
    {"clock", l_clock},
    {"driver", l_driver},
    {"measure", l_measure},
    {"session", l_session_open},
    {"decide", l_decide},
    {NULL, NULL},
};

int luaopen_klab_timing(lua_State *L)
{
    lh_newclass(L, SESSION_T, session_methods, session_meta);
    lua_pop(L, 1);
    luaL_newlib(L, timing_funcs);
    return 1;
}
