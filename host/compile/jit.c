/*
 * jit.c: kernel compilation without a GPU (see jit.h): requests, results
 * and the entry point; the parts are named in jit_impl.h.
 *
 * Order of work in jit_compile:
 *   1. validate the request and the text (empty, binary, too large);
 *   2. pick the language; for PTX reject device launches and unresolved
 *      externs before compiling;
 *   3. check the target by asking the compiler;
 *   4. hash language + source + options + arch + compiler version and look
 *      in the disk cache;
 *   5. compile (ptxas subprocess, or NVRTC in a confined child), keep the log;
 *   6. read the cubin (kernels, resources, symbols) and the PTX census,
 *      reject what klab refuses, store in the cache.
 */
#include "compile/jit_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "compile/ptx_census.h"
#include "driver/dynlib.h"

/* ---- small helpers ------------------------------------------------------ */

void jit_toolkit_roots(char roots[][4096], int *n)
{
    *n = 0;
    char p[4096];
    snprintf(p, sizeof p, "%s/include", dynlib_cuda_home());
    if (realpath(p, roots[*n]))
        (*n)++;
    snprintf(p, sizeof p, "%s/include/cccl", dynlib_cuda_home());
    if (*n < JIT_TOOLKIT_MAX_ROOTS && realpath(p, roots[*n]))
        (*n)++;
}

void jit_include_roots(const jit_request *req, char roots[][4096], int *n)
{
    jit_toolkit_roots(roots, n);
    if (req->include_dir && *req->include_dir && realpath(req->include_dir, roots[*n]))
        (*n)++;
}

char *jit_dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

const char *jit_display_name(const jit_request *req)
{
    return req->name && *req->name ? req->name : "<source>";
}

int jit_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

int jit_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads a whole regular file (up to limit bytes). NULL on any failure. */
unsigned char *jit_read_file(const char *path, size_t limit, size_t *len)
{
    char *b = NULL;
    ks_status ignored;
    if (fs_read(path, limit, 0, &b, len, &ignored) != KS_OK)
        return NULL;
    return (unsigned char *)b;
}

/* Keeps at most max bytes of *text: its head and tail around a line
 * "[... N bytes cut]", cut at line ends where there are some. */
void jit_bound_text(char **text, size_t *len, size_t max)
{
    if (!*text || *len <= max)
        return;
    size_t head = max / 2, tail = max / 2 - 64;
    const char *s = *text;
    for (size_t k = head; k > head / 2; k--)
        if (s[k - 1] == '\n') {
            head = k;
            break;
        }
    size_t tstart = *len - tail;
    for (size_t k = tstart; k < *len && k < tstart + tail / 2; k++)
        if (s[k] == '\n') {
            tstart = k + 1;
            break;
        }
    char mark[64];
    int ml = snprintf(mark, sizeof mark, "[... %zu bytes cut]\n", tstart - head);
    size_t nlen = head + (size_t)ml + (*len - tstart);
    char *b = malloc(nlen + 1);
    if (!b)
        return;
    memcpy(b, s, head);
    memcpy(b + head, mark, (size_t)ml);
    memcpy(b + head + (size_t)ml, s + tstart, *len - tstart);
    b[nlen] = '\0';
    free(*text);
    *text = b;
    *len = nlen;
}

const char *jit_lang_name(jit_lang lang)
{
    switch (lang) {
    case JIT_LANG_PTX: return "ptx";
    case JIT_LANG_CUDA: return "cuda";
    default: return "auto";
    }
}

void jit_request_init(jit_request *req)
{
    memset(req, 0, sizeof *req);
    req->lineinfo = 1;
    req->use_cache = 1;
}

/* ---- results ------------------------------------------------------------ */

void jit_result_free(jit_result *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nkernels; i++) {
        free(r->kernels[i].name);
        free(r->kernels[i].params);
    }
    free(r->kernels);
    free(r->cubin);
    free(r->ptx);
    free(r->log);
    free(r);
}

jit_result *jit_result_new(const jit_request *req, jit_lang lang)
{
    jit_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->lang = lang;
    snprintf(r->arch, sizeof r->arch, "%s", req->arch);
    r->log = jit_dupn("", 0);
    if (!r->log) {
        free(r);
        return NULL;
    }
    return r;
}

void jit_set_log(jit_result *r, char *log, size_t len)
{
    free(r->log);
    r->log = log;
    r->log_size = len;
}

/* k->params from the cubin's EIATTR_KPARAM_INFO records, by ordinal; left
 * NULL unless every ordinal 0..n-1 is there exactly once (a layout with a
 * hole would be checked wrongly, so none is better). KS_ENOMEM or KS_OK. */
static int kernel_params(const cubin_kernel *ck, jit_kernel *k)
{
    int n = ck->nparams;
    if (ck->params_unread || n <= 0)
        return KS_OK;
    jit_param *p = malloc(sizeof *p * (size_t)n);
    if (!p)
        return KS_ENOMEM;
    for (int i = 0; i < n; i++)
        p[i].size = -1;
    for (int i = 0; i < n; i++) {
        const cubin_param *cp = &ck->params[i];
        /* The size field has 14 bits: a parameter that seems to end past
         * the parameter space was not read right. */
        if (cp->ordinal < 0 || cp->ordinal >= n || p[cp->ordinal].size >= 0 ||
            (ck->param_bytes >= 0 && cp->offset + cp->size > ck->param_bytes)) {
            free(p);
            return KS_OK;
        }
        p[cp->ordinal].offset = cp->offset;
        p[cp->ordinal].size = cp->size;
    }
    k->params = p;
    k->nparams = n;
    return KS_OK;
}

/* Fills kernels, census and cubin hash from r->cubin, r->ptx and r->log,
 * and applies the cubin checks. */
int jit_finish_result(jit_result *r, ks_status *st)
{
    cubin_info ci;
    int rc = cubin_parse(r->cubin, r->cubin_size, &ci, st);
    if (rc)
        return rc;
    rc = jit_check_cubin(&ci, st);
    if (rc) {
        cubin_free(&ci);
        return rc;
    }
    log_info li = {0};
    jit_parse_log(r->log, &li);
    r->kernels = calloc((size_t)ci.nkernels, sizeof *r->kernels);
    if (!r->kernels) {
        cubin_free(&ci);
        free(li.fn);
        return ks_fail(st, KS_ENOMEM, 0, "out of memory");
    }
    for (int i = 0; i < ci.nkernels; i++) {
        const cubin_kernel *ck = &ci.kernels[i];
        jit_kernel *k = &r->kernels[r->nkernels];
        log_fn *lf = jit_log_find(&li, ck->name, strlen(ck->name), 0);
        if (!(k->name = strdup(ck->name))) {
            rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
            break;
        }
        r->nkernels++;
        /* The cubin is authoritative; the log fills what it lacks. */
        k->registers = ck->registers >= 0 ? ck->registers : (lf && lf->has_regs ? lf->registers : -1);
        k->spill_stores = lf && lf->has_spills ? lf->spill_st : -1;
        k->spill_loads = lf && lf->has_spills ? lf->spill_ld : -1;
        k->local_bytes = ck->frame_bytes ? ck->frame_bytes : (lf && lf->has_spills ? lf->frame : 0);
        k->shared_cubin = ck->shared_section;
        /* The section includes the system's 1 KiB reservation on sm_90+;
         * the kernel's own figure is what ptxas reports. Without a log
         * line, subtract the reservation when the cubin declares it. */
        if (lf && lf->has_regs)
            k->shared_static = lf->smem;
        else if (ci.reserved_smem && ck->shared_section >= 1024)
            k->shared_static = ck->shared_section - 1024;
        else
            k->shared_static = ck->shared_section;
        k->sass_instructions = ck->text_bytes / 16;
        k->param_bytes = ck->param_bytes;
        if (kernel_params(ck, k) != KS_OK) {
            rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
            break;
        }
        k->tcgen05 = ck->tcgen05;
        k->setmaxnreg = ck->reg_reconfig;
        k->mbarriers = ck->mbarriers;
    }
    free(li.fn);
    cubin_free(&ci);
    if (rc)
        return rc;
    if (r->ptx)
        ptx_census_count(r->ptx, r->ptx_size, &r->census);
    sha256_hex(r->cubin, r->cubin_size, r->cubin_hash);
    return KS_OK;
}

/* ---- options ------------------------------------------------------------ */

/* Options the caller may not pass: they would change the target, the
 * output, or make the code relocatable. */
static int check_options(const jit_request *req, jit_lang lang, ks_status *st)
{
    static const char *const ptxas_bad[] = {"-c", "--compile-only", "-o", "--output-file", "-arch",
                                            "--gpu-name", "-e", "--entry", "--input-as-string", NULL};
    static const char *const nvrtc_bad[] = {"-arch", "--gpu-architecture", "-rdc",
                                            "--relocatable-device-code", "-dc", "--device-c",
                                            "-dlto", "--dlink-time-opt", "-ewp",
                                            "--extensible-whole-program", NULL};
    const char *const *bad = lang == JIT_LANG_PTX ? ptxas_bad : nvrtc_bad;
    for (int i = 0; i < req->noptions; i++) {
        const char *o = req->options[i];
        if (!o)
            return ks_fail(st, KS_EINVAL, 0, "option %d is NULL", i + 1);
        for (int k = 0; bad[k]; k++) {
            size_t n = strlen(bad[k]);
            if (strncmp(o, bad[k], n) == 0 && (o[n] == '\0' || o[n] == '=' || !strcmp(bad[k], "-arch")))
                return ks_fail(st, KS_EINVAL, 0,
                               "compiler option %.60s is not allowed (klab sets the target and compiles whole-program)",
                               o);
        }
    }
    return KS_OK;
}

/* ---- the entry point ---------------------------------------------------- */

int jit_compile(const jit_request *req, jit_result **out, ks_status *st)
{
    *out = NULL;
    ks_clear(st);
    if (!req || !req->source)
        return ks_fail(st, KS_EINVAL, 0, "jit_compile: no source");
    if (!req->arch || !*req->arch)
        return ks_fail(st, KS_EINVAL, 0, "jit_compile: no target arch (for example sm_90a)");
    if (req->noptions < 0 || (req->noptions > 0 && !req->options))
        return ks_fail(st, KS_EINVAL, 0, "jit_compile: bad option list");
    int rc = jit_check_text(req, st);
    if (rc)
        return rc;
    jit_lang lang = req->lang;
    if (lang != JIT_LANG_PTX && lang != JIT_LANG_CUDA)
        lang = jit_detect_lang(req->name, req->source, req->source_len);
    if ((rc = check_options(req, lang, st)))
        return rc;
    if (lang == JIT_LANG_PTX && (rc = jit_check_ptx(req->source, req->source_len, st)))
        return rc;
    if ((rc = jit_check_arch(req->arch, lang, st)))
        return rc;

    /* Compiler identity for the hash. */
    char compiler[96];
    const nvrtc_api *api = NULL;
    if (lang == JIT_LANG_PTX) {
        char v[64];
        if ((rc = jit_ptxas_version(v, sizeof v, st)))
            return rc;
        snprintf(compiler, sizeof compiler, "ptxas %s", v);
    } else {
        if ((rc = jit_nvrtc_load(&api, st)))
            return rc;
        snprintf(compiler, sizeof compiler, "nvrtc %s", api->version_str);
    }
    char hash[SHA256_HEX_LEN + 1];
    jit_content_hash(req, lang, compiler, hash);

    char dir[1024] = "", path[1100];
    char note[200] = "";
    if (req->use_cache) {
        ks_status cst;
        if (req->cache_dir && *req->cache_dir)
            snprintf(dir, sizeof dir, "%s", req->cache_dir);
        else if (jit_cache_dir(dir, sizeof dir, &cst) != KS_OK)
            snprintf(note, sizeof note, "%.190s", cst.msg);
        if (dir[0] && jit_cache_entry_path(dir, hash, path, sizeof path) == 0) {
            jit_result *hit = NULL;
            if (jit_cache_load(path, req, lang, compiler, &hit) == 0) {
                snprintf(hit->hash, sizeof hit->hash, "%s", hash);
                jit_bound_text(&hit->log, &hit->log_size, JIT_LOG_MAX);
                *out = hit;
                return KS_OK;
            }
        }
    } else {
        snprintf(note, sizeof note, "cache bypassed");
    }

    jit_result *r = jit_result_new(req, lang);
    if (!r)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory");
    snprintf(r->compiler, sizeof r->compiler, "%s", compiler);
    snprintf(r->hash, sizeof r->hash, "%s", hash);
    snprintf(r->cache_note, sizeof r->cache_note, "%s", note);
    if (lang == JIT_LANG_PTX)
        rc = jit_compile_ptx(req, r, st);
    else if (!req->trusted || req->limit_memory > 0 || req->limit_cpu_s > 0)
        rc = jit_compile_cuda_limited(req, api, r, st);
    else {
        snprintf(r->confinement, sizeof r->confinement, "klab's own source");
        rc = jit_compile_cuda(req, api, r, st);
    }
    if (rc == KS_OK && lang == JIT_LANG_CUDA && r->ptx)
        rc = jit_check_ptx(r->ptx, r->ptx_size, st);
    if (rc == KS_OK)
        rc = jit_finish_result(r, st);
    jit_bound_text(&r->log, &r->log_size, JIT_LOG_MAX);
    if (rc == KS_ECOMPILE || rc == KS_EREJECT) {
        *out = r;           /* the caller wants the log */
        return rc;
    }
    if (rc) {
        jit_result_free(r);
        return rc;
    }
    /* What compiled unconfined is not kept: a later, confined run compiles
     * it again. */
    if (req->use_cache && dir[0] && strncmp(r->confinement, "unconfined", 10) != 0)
        jit_cache_store(dir, r);
    *out = r;
    return KS_OK;
}
