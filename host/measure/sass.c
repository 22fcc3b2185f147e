/*
 * sass.c: SASS listings, the disassembler subprocess and the CUPTI SASS
 * Metrics API. See sass.h.
 */
#if defined(__LP64__) && !defined(CUPTILP64)
#define CUPTILP64 1
#endif

#include "measure/sass.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cupti_result.h>
#include <cupti_sass_metrics.h>

#include "base/fs.h"
#include "measure/cupti_act.h"
#include "driver/dynlib.h"
#include "proc/spawn.h"

/* ---- listings ---- */

void sass_listing_free(sass_listing *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nfuncs; i++)
        free(l->funcs[i]);
    free(l->funcs);
    free(l->rows);
    memset(l, 0, sizeof *l);
}

/* Index of function name[0..n) in l, added when new; -1 when out of memory. */
static long func_index(sass_listing *l, const char *name, size_t n)
{
    for (size_t i = 0; i < l->nfuncs; i++)
        if (strlen(l->funcs[i]) == n && memcmp(l->funcs[i], name, n) == 0)
            return (long)i;
    if (l->nfuncs == l->fcap) {
        size_t cap = l->fcap ? 2 * l->fcap : 8;
        char **f = realloc(l->funcs, cap * sizeof *f);
        if (!f)
            return -1;
        l->funcs = f;
        l->fcap = cap;
    }
    char *s = malloc(n + 1);
    if (!s)
        return -1;
    memcpy(s, name, n);
    s[n] = '\0';
    l->funcs[l->nfuncs] = s;
    return (long)l->nfuncs++;
}

/* A function name that starts at p (up to end): stops at a space, tab,
 * comma, colon or quote. Returns its length. */
static size_t name_len(const char *p, const char *end)
{
    const char *q = p;
    while (q < end && *q != ' ' && *q != '\t' && *q != ',' && *q != ':' && *q != '"' && *q != '\r')
        q++;
    return (size_t)(q - p);
}

static const char *find_in(const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    for (; p + n <= end; p++)
        if (memcmp(p, needle, n) == 0)
            return p;
    return NULL;
}

static int starts(const char *p, const char *end, const char *prefix)
{
    size_t n = strlen(prefix);
    return (size_t)(end - p) >= n && memcmp(p, prefix, n) == 0;
}

/* When the line [p, end) (leading blanks skipped) names a function, returns
 * the name's start and sets *n; else NULL. Recognised: nvdisasm's
 * ".section .text.NAME,...", "//----- .text.NAME -----" and ".text.NAME:",
 * and cuobjdump's "Function : NAME". */
static const char *function_header(const char *p, const char *end, size_t *n)
{
    const char *f = find_in(p, end, "Function : ");
    if (f && (starts(p, end, "Function") || p == f)) {
        f += strlen("Function : ");
        *n = name_len(f, end);
        return *n ? f : NULL;
    }
    if (starts(p, end, ".section") || starts(p, end, "//") || starts(p, end, ".text.")) {
        const char *t = find_in(p, end, ".text.");
        if (!t)
            return NULL;
        t += strlen(".text.");
        *n = name_len(t, end);
        if (!*n)
            return NULL;
        /* ".text.NAME:" must end in the colon (a label), not carry more. */
        if (starts(p, end, ".text.")) {
            const char *q = t + *n;
            if (q >= end || *q != ':')
                return NULL;
        }
        return t;
    }
    return NULL;
}

static int add_row(sass_listing *l, const sass_row *r)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        sass_row *v = realloc(l->rows, cap * sizeof *v);
        if (!v)
            return -1;
        l->rows = v;
        l->cap = cap;
    }
    l->rows[l->n++] = *r;
    return 0;
}

/* Parses an address row in [p, end) (leading blanks skipped): 1 when it is
 * one (r filled, except r->func), else 0. */
static int address_row(const char *p, const char *end, sass_row *r)
{
    if (!starts(p, end, "/*"))
        return 0;
    const char *q = p + 2;
    const char *h = q;
    uint64_t off = 0;
    while (q < end && isxdigit((unsigned char)*q)) {
        int c = tolower((unsigned char)*q);
        off = off * 16 + (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
        if (off > 0xffffffffu)
            return 0;
        q++;
    }
    if (q == h || q + 2 > end || q[0] != '*' || q[1] != '/')
        return 0;
    q += 2;
    while (q < end && (*q == ' ' || *q == '\t'))
        q++;
    if (q < end && *q == '{') { /* dual-issue braces of older listings */
        q++;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
    }
    memset(r, 0, sizeof *r);
    if (q < end && *q == '@') {
        r->predicated = 1;
        while (q < end && *q != ' ' && *q != '\t')
            q++;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
    }
    if (q >= end || !(isupper((unsigned char)*q) || *q == '_'))
        return 0;
    const char *m = q;
    while (q < end && *q != ' ' && *q != '\t' && *q != ';' && *q != '\r')
        q++;
    size_t mn = (size_t)(q - m);
    size_t on = 0;
    while (on < mn && m[on] != '.')
        on++;
    if (on >= SASS_OP_MAX)
        on = SASS_OP_MAX - 1;
    memcpy(r->op, m, on);
    r->op[on] = '\0';
    if (mn >= SASS_MNEM_MAX)
        mn = SASS_MNEM_MAX - 1;
    memcpy(r->mnem, m, mn);
    r->mnem[mn] = '\0';
    r->offset = (uint32_t)off;
    return 1;
}

int sass_parse(const char *text, size_t len, sass_listing *out, ks_status *st)
{
    long cur = -1;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *s = p;
        while (s < le && (*s == ' ' || *s == '\t'))
            s++;
        size_t n;
        const char *name;
        sass_row r;
        if (address_row(s, le, &r)) {
            if (cur < 0 && (cur = func_index(out, "", 0)) < 0)
                goto oom;
            r.func = (size_t)cur;
            if (add_row(out, &r))
                goto oom;
        } else if ((name = function_header(s, le, &n))) {
            if ((cur = func_index(out, name, n)) < 0)
                goto oom;
        }
        p = nl ? nl + 1 : end;
    }
    return KS_OK;
oom:
    return ks_fail(st, KS_ENOMEM, 0, "out of memory parsing a SASS listing");
}

/* ---- histograms ---- */

void sass_hist_free(sass_hist *h)
{
    if (!h)
        return;
    free(h->v);
    memset(h, 0, sizeof *h);
}

int sass_hist_add(sass_hist *h, const char *op, uint64_t count, ks_status *st)
{
    for (size_t i = 0; i < h->n; i++) {
        if (strcmp(h->v[i].op, op) == 0) {
            h->v[i].count += count;
            return KS_OK;
        }
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 32;
        sass_hist_entry *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return ks_fail(st, KS_ENOMEM, 0, "out of memory for a SASS histogram");
        h->v = v;
        h->cap = cap;
    }
    snprintf(h->v[h->n].op, sizeof h->v[h->n].op, "%s", op);
    h->v[h->n].count = count;
    h->n++;
    return KS_OK;
}

uint64_t sass_hist_get(const sass_hist *h, const char *op)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->v[i].op, op) == 0)
            return h->v[i].count;
    return 0;
}

int sass_census(const sass_listing *l, const char *func, sass_hist *out, ks_status *st)
{
    for (size_t i = 0; i < l->n; i++) {
        if (func && strcmp(l->funcs[l->rows[i].func], func) != 0)
            continue;
        if (sass_hist_add(out, l->rows[i].op, 1, st))
            return st->code;
    }
    return KS_OK;
}

void sass_records_free(sass_record *r, size_t n)
{
    if (!r)
        return;
    for (size_t i = 0; i < n; i++)
        free(r[i].func);
    free(r);
}

/* Row order for the join: function, then offset. */
static const sass_listing *sort_listing;

static int row_cmp(const void *a, const void *b)
{
    const sass_row *x = &sort_listing->rows[*(const size_t *)a];
    const sass_row *y = &sort_listing->rows[*(const size_t *)b];
    if (x->func != y->func)
        return x->func < y->func ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The row of function f at offset off in the sorted index, or NULL. */
static const sass_row *lookup(const sass_listing *l, const size_t *idx, size_t f, uint32_t off)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const sass_row *r = &l->rows[idx[mid]];
        if (r->func < f || (r->func == f && r->offset < off))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < l->n) {
        const sass_row *r = &l->rows[idx[lo]];
        if (r->func == f && r->offset == off)
            return r;
    }
    return NULL;
}

int sass_join(const sass_listing *l, const sass_record *recs, size_t n, sass_hist *out,
              size_t *unmatched, uint64_t *unmatched_count, ks_status *st)
{
    if (unmatched)
        *unmatched = 0;
    if (unmatched_count)
        *unmatched_count = 0;
    size_t *idx = malloc((l->n ? l->n : 1) * sizeof *idx);
    if (!idx)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory joining SASS records");
    for (size_t i = 0; i < l->n; i++)
        idx[i] = i;
    /* qsort has no context argument; the listing is only read. */
    sort_listing = l;
    qsort(idx, l->n, sizeof *idx, row_cmp);
    sort_listing = NULL;

    /* Functions that have rows: when only one does, offsets alone decide. */
    size_t with_rows = 0, only = 0;
    for (size_t f = 0; f < l->nfuncs; f++) {
        for (size_t i = 0; i < l->n; i++) {
            if (l->rows[i].func == f) {
                with_rows++;
                only = f;
                break;
            }
        }
    }

    int rc = KS_OK;
    for (size_t i = 0; i < n; i++) {
        const sass_row *row = NULL;
        long f = -1;
        if (recs[i].func) {
            for (size_t j = 0; j < l->nfuncs; j++)
                if (strcmp(l->funcs[j], recs[i].func) == 0)
                    f = (long)j;
        }
        if (f >= 0)
            row = lookup(l, idx, (size_t)f, recs[i].offset);
        else if (with_rows == 1)
            row = lookup(l, idx, only, recs[i].offset);
        else if (!recs[i].func) {
            for (size_t j = 0; j < l->nfuncs && !row; j++)
                row = lookup(l, idx, j, recs[i].offset);
        }
        if (!row) {
            if (unmatched)
                (*unmatched)++;
            if (unmatched_count)
                *unmatched_count += recs[i].count;
            continue;
        }
        if ((rc = sass_hist_add(out, row->op, recs[i].count, st)))
            break;
    }
    free(idx);
    return rc;
}

/* ---- the disassembler ---- */

static int executable(const char *path)
{
    struct stat sb;
    return path && *path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, X_OK) == 0;
}

/* Looks for `tool`: $env (a full path) when set, else CUDA_HOME/bin, else
 * every PATH entry. 1 when found (path filled). */
static int find_one(const char *env, const char *tool, char *path, size_t n)
{
    const char *e = getenv(env);
    if (e && *e) {
        snprintf(path, n, "%s", e);
        return executable(path);
    }
    snprintf(path, n, "%s/bin/%s", dynlib_cuda_home(), tool);
    if (executable(path))
        return 1;
    const char *pv = getenv("PATH");
    while (pv && *pv) {
        const char *c = strchr(pv, ':');
        size_t dl = c ? (size_t)(c - pv) : strlen(pv);
        if (dl > 0) {
            snprintf(path, n, "%.*s/%s", (int)dl, pv, tool);
            if (executable(path))
                return 1;
        }
        pv = c ? c + 1 : NULL;
    }
    path[0] = '\0';
    return 0;
}

int sass_find_tool(char *path, size_t n, int *kind, ks_status *st)
{
    if (find_one("KLAB_NVDISASM", "nvdisasm", path, n)) {
        *kind = SASS_TOOL_NVDISASM;
        return KS_OK;
    }
    if (find_one("KLAB_CUOBJDUMP", "cuobjdump", path, n)) {
        *kind = SASS_TOOL_CUOBJDUMP;
        return KS_OK;
    }
    *kind = 0;
    return ks_fail(st, KS_ENOTFOUND, 0,
                   "nvdisasm not found (nor cuobjdump; looked in %s/bin and PATH; "
                   "KLAB_NVDISASM names one)", dynlib_cuda_home());
}

#define TOOL_OUTPUT_MAX ((size_t)512 << 20)

/* The tool writes into files, not pipes, so that it never waits for a
 * reader: the evaluation starts it, goes on with the GPU stages, and reads
 * the listing afterwards. */
struct sass_disasm {
    spawn_proc *proc; /* NULL once collected */
    char tool[1024];
    char dir[1024];   /* private temporary folder: cubin, listing, stderr */
    char cubin[1100], out[1100], err[1100];
};

void sass_disasm_free(sass_disasm *d)
{
    if (!d)
        return;
    spawn_free(d->proc);
    if (d->dir[0]) {
        ks_status ignored;
        (void)fs_remove_tree(d->dir, &ignored);
    }
    free(d);
}

const char *sass_disasm_tool(const sass_disasm *d) { return d ? d->tool : ""; }

int sass_disasm_start(const void *image, size_t n, sass_disasm **out, ks_status *st)
{
    *out = NULL;
    if (!image || n == 0)
        return ks_fail(st, KS_EINVAL, 0, "sass_disassemble: empty image");
    sass_disasm *d = calloc(1, sizeof *d);
    if (!d)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory");
    int kind;
    if (sass_find_tool(d->tool, sizeof d->tool, &kind, st)) {
        free(d);
        return st->code;
    }
    if (fs_mkdtemp("klab-sass-", d->dir, sizeof d->dir, st)) {
        d->dir[0] = '\0';
        goto fail;
    }
    snprintf(d->cubin, sizeof d->cubin, "%s/k.cubin", d->dir);
    snprintf(d->out, sizeof d->out, "%s/listing", d->dir);
    snprintf(d->err, sizeof d->err, "%s/stderr", d->dir);
    int fd = open(d->cubin, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        ks_fail(st, KS_EIO, errno, "cannot write the cubin to %s: %s", d->cubin, strerror(errno));
        goto fail;
    }
    const char *q = image;
    size_t left = n;
    while (left) {
        ssize_t w = write(fd, q, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            ks_fail(st, KS_EIO, e, "cannot write the cubin to %s: %s", d->cubin, strerror(e));
            goto fail;
        }
        q += w;
        left -= (size_t)w;
    }
    close(fd);
    const char *argv[5];
    argv[0] = d->tool;
    if (kind == SASS_TOOL_NVDISASM) {
        argv[1] = "-c";
        argv[2] = "-hex";
        argv[3] = d->cubin;
        argv[4] = NULL;
    } else {
        argv[1] = "-sass";
        argv[2] = d->cubin;
        argv[3] = NULL;
    }
    spawn_opts o;
    memset(&o, 0, sizeof o);
    o.argv = argv;
    o.out = SPAWN_FILE;
    o.out_path = d->out;
    o.err = SPAWN_FILE;
    o.err_path = d->err;
    if (spawn_start(&o, &d->proc, st))
        goto fail;
    *out = d;
    return KS_OK;
fail:
    sass_disasm_free(d);
    return st->code;
}

int sass_disasm_finish(sass_disasm *d, double timeout_s, char **text, size_t *len, ks_status *st)
{
    *text = NULL;
    *len = 0;
    if (!d || !d->proc)
        return ks_fail(st, KS_EINVAL, 0, "the disassembly was already collected");
    double limit = timeout_s > 0 ? timeout_s : 60.0;
    spawn_result r;
    int rc = spawn_wait(d->proc, limit, &r, st);
    spawn_free(d->proc);
    d->proc = NULL;
    if (rc)
        return rc;
    if (r.end == SPAWN_TIMED_OUT)
        return ks_fail(st, KS_ETIMEOUT, 0, "%s did not finish within %g s", d->tool, limit);
    if (!(r.exited && r.exit_code == 0)) {
        /* The first line of its stderr, for the message. */
        char *e = NULL;
        size_t el = 0;
        ks_status ignored;
        (void)fs_read(d->err, (size_t)1 << 20, 0, &e, &el, &ignored);
        el = e ? strcspn(e, "\n") : 0;
        if (r.exited)
            ks_fail(st, KS_ECHILD, r.exit_code, "%s exited with status %d: %.*s", d->tool, r.exit_code,
                    (int)(el > 300 ? 300 : el), e ? e : "");
        else
            ks_fail(st, KS_ECHILD, r.signal, "%s died with signal %d", d->tool, r.signal);
        free(e);
        return st->code;
    }
    return fs_read(d->out, TOOL_OUTPUT_MAX, 0, text, len, st);
}

int sass_disassemble(const void *image, size_t n, double timeout_s, char **text, size_t *len,
                     char *tool, size_t toolsize, ks_status *st)
{
    *text = NULL;
    *len = 0;
    if (tool && toolsize)
        tool[0] = '\0';
    sass_disasm *d;
    if (sass_disasm_start(image, n, &d, st))
        return st->code;
    if (tool && toolsize)
        snprintf(tool, toolsize, "%s", d->tool);
    int rc = sass_disasm_finish(d, timeout_s, text, len, st);
    sass_disasm_free(d);
    return rc;
}

/* ---- CUPTI SASS metrics ---- */

typedef struct sass_api {
    CUptiResult (*GetProperties)(CUpti_SassMetrics_GetProperties_Params *);
    CUptiResult (*SetConfig)(CUpti_SassMetricsSetConfig_Params *);
    CUptiResult (*Enable)(CUpti_SassMetricsEnable_Params *);
    CUptiResult (*Disable)(CUpti_SassMetricsDisable_Params *);
    CUptiResult (*GetDataProperties)(CUpti_SassMetricsGetDataProperties_Params *);
    CUptiResult (*FlushData)(CUpti_SassMetricsFlushData_Params *);
} sass_api;

static sass_api sapi;
/* Set once by the first sass_metrics_setup, whatever its outcome: a second
 * SetConfig in a process fails on driver 580, so there is no retry. */
static int setup_done;
static ks_status setup_status;
static int setup_device = -1;
static uint64_t metric_id;

static const char SASS_METRIC[] = "smsp__sass_inst_executed";

static int sass_load(ks_status *st)
{
    if (sapi.FlushData)
        return KS_OK;
    sass_api a;
    memset(&a, 0, sizeof a);
    const dynlib_symbol syms[] = {
        {"cuptiSassMetricsGetProperties", (void **)&a.GetProperties, 0},
        {"cuptiSassMetricsSetConfig", (void **)&a.SetConfig, 0},
        {"cuptiSassMetricsEnable", (void **)&a.Enable, 0},
        {"cuptiSassMetricsDisable", (void **)&a.Disable, 0},
        {"cuptiSassMetricsGetDataProperties", (void **)&a.GetDataProperties, 0},
        {"cuptiSassMetricsFlushData", (void **)&a.FlushData, 0},
    };
    if (cupti_bind(syms, DYNLIB_COUNT(syms), 1, st))
        return st->code;
    sapi = a;
    return KS_OK;
}

static int setup_once(cuda_ctx *c, ks_status *st)
{
    if (profile_ready(st))
        return st->code;
    if (sass_load(st))
        return st->code;
    if (cuda_ctx_use(c, st))
        return st->code;
    int ordinal = cuda_ctx_ordinal(c);
    char chip[64];
    if (profile_chip_name(ordinal, chip, sizeof chip, st))
        return st->code;
    CUpti_SassMetrics_GetProperties_Params gp;
    memset(&gp, 0, sizeof gp);
    gp.structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE;
    gp.pChipName = chip;
    gp.pMetricName = SASS_METRIC;
    CUptiResult r = sapi.GetProperties(&gp);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiSassMetricsGetProperties(smsp__sass_inst_executed)");
    CUpti_SassMetrics_Config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.metricId = gp.metric.metricId;
    cfg.outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
    CUpti_SassMetricsSetConfig_Params sc;
    memset(&sc, 0, sizeof sc);
    sc.structSize = CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE;
    sc.pConfigs = &cfg;
    sc.numOfMetricConfig = 1;
    sc.deviceIndex = (uint32_t)ordinal;
    r = sapi.SetConfig(&sc);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiSassMetricsSetConfig");
    metric_id = cfg.metricId;
    setup_device = ordinal;
    return KS_OK;
}

int sass_metrics_setup(cuda_ctx *c, ks_status *st)
{
    if (!c)
        return ks_fail(st, KS_EINVAL, 0, "sass_metrics_setup: no context");
    if (!setup_done) {
        /* The driver missing is not a configuration attempt: try again later. */
        if (cuda_load(st))
            return st->code;
        ks_clear(&setup_status);
        setup_once(c, &setup_status);
        setup_done = 1;
    }
    if (setup_status.code != KS_OK) {
        *st = setup_status;
        return st->code;
    }
    if (cuda_ctx_ordinal(c) != setup_device)
        return ks_fail(st, KS_EINVAL, 0, "SASS metrics were configured for device %d, not %d", setup_device,
                       cuda_ctx_ordinal(c));
    return KS_OK;
}

int sass_metrics_collect(cuda_ctx *c, profile_pass_fn run, void *ud, sass_record **out, size_t *n,
                         ks_status *st)
{
    *out = NULL;
    *n = 0;
    if (!run)
        return ks_fail(st, KS_EINVAL, 0, "sass_metrics_collect: no run function");
    /* A range profiler kept enabled between measurements holds CUPTI's
     * profiling side (its configuration is refused meanwhile): it is given
     * back first. */
    profile_release();
    if (sass_metrics_setup(c, st))
        return st->code;
    if (cupti_act_active())
        return ks_fail(st, KS_EINVAL, 0, "a CUPTI activity session (timing) is active; collect outside of it");
    if (cuda_ctx_use(c, st))
        return st->code;
    CUcontext h = cuda_ctx_handle(c);
    CUpti_SassMetricsEnable_Params en;
    memset(&en, 0, sizeof en);
    en.structSize = CUpti_SassMetricsEnable_Params_STRUCT_SIZE;
    en.ctx = h;
    en.enableLazyPatching = 1;
    CUptiResult r = sapi.Enable(&en);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiSassMetricsEnable");

    int rc = KS_OK;
    CUpti_SassMetrics_Data *data = NULL;
    CUpti_SassMetrics_InstanceValue *vals = NULL;
    sass_record *recs = NULL;
    size_t nrec = 0;
    if ((rc = run(ud, 0, st))) {
        ks_status ignored;
        ks_clear(&ignored);
        (void)cuda_ctx_sync(c, &ignored);
        goto done;
    }
    if ((rc = cuda_ctx_sync(c, st)))
        goto done;
    CUpti_SassMetricsGetDataProperties_Params dp;
    memset(&dp, 0, sizeof dp);
    dp.structSize = CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE;
    dp.ctx = h;
    r = sapi.GetDataProperties(&dp);
    if (r != CUPTI_SUCCESS) {
        rc = cupti_fail(st, r, "cuptiSassMetricsGetDataProperties");
        goto done;
    }
    nrec = dp.numOfPatchedInstructionRecords;
    size_t ninst = dp.numOfInstances ? dp.numOfInstances : 1;
    if (nrec == 0)
        goto done;
    data = calloc(nrec, sizeof *data);
    vals = calloc(nrec * ninst, sizeof *vals);
    recs = calloc(nrec, sizeof *recs);
    if (!data || !vals || !recs) {
        rc = ks_fail(st, KS_ENOMEM, 0, "out of memory for %zu SASS records", nrec);
        nrec = 0;
        goto done;
    }
    for (size_t i = 0; i < nrec; i++) {
        data[i].structSize = CUPTI_PROFILER_STRUCT_SIZE(CUpti_SassMetrics_Data, pInstanceValues);
        data[i].pInstanceValues = &vals[i * ninst];
    }
    CUpti_SassMetricsFlushData_Params fd;
    memset(&fd, 0, sizeof fd);
    fd.structSize = CUpti_SassMetricsFlushData_Params_STRUCT_SIZE;
    fd.ctx = h;
    fd.numOfPatchedInstructionRecords = nrec;
    fd.numOfInstances = ninst;
    fd.pMetricsData = data;
    r = sapi.FlushData(&fd);
    if (r != CUPTI_SUCCESS) {
        rc = cupti_fail(st, r, "cuptiSassMetricsFlushData");
        nrec = 0;
        goto done;
    }
    for (size_t i = 0; i < nrec; i++) {
        uint64_t sum = 0;
        for (size_t k = 0; k < ninst; k++)
            if (data[i].pInstanceValues[k].metricId == metric_id)
                sum += data[i].pInstanceValues[k].value;
        recs[i].offset = data[i].pcOffset;
        recs[i].count = sum;
        if (data[i].functionName) {
            size_t fl = strlen(data[i].functionName) + 1;
            recs[i].func = malloc(fl);
            if (recs[i].func)
                memcpy(recs[i].func, data[i].functionName, fl);
            /* CUPTI allocates the name for the caller to free. */
            free((void *)data[i].functionName);
            data[i].functionName = NULL;
        }
    }

done:;
    CUpti_SassMetricsDisable_Params dis;
    memset(&dis, 0, sizeof dis);
    dis.structSize = CUpti_SassMetricsDisable_Params_STRUCT_SIZE;
    dis.ctx = h;
    r = sapi.Disable(&dis);
    if (r != CUPTI_SUCCESS && rc == KS_OK)
        rc = cupti_fail(st, r, "cuptiSassMetricsDisable");
    free(data);
    free(vals);
    if (rc) {
        sass_records_free(recs, nrec);
        return rc;
    }
    *out = recs;
    *n = recs ? nrec : 0;
    return KS_OK;
}
