/*
 * jit.c: kernel compilation without a GPU (see jit.h): the entry point,
 * which takes a request from start to result by calling the parts below it
 * (jit_common.h names their floors); none of them calls back up.
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
#include "compile/jit.h"

#include <stdio.h>
#include <string.h>

#include "compile/jit_cache.h"
#include "compile/jit_common.h"
#include "compile/jit_nvrtc.h"
#include "compile/jit_policy.h"
#include "compile/jit_ptxas.h"
#include "compile/jit_result.h"

/* ---- requests ----------------------------------------------------------- */

void jit_request_init(jit_request *req)
{
    memset(req, 0, sizeof *req);
    req->lineinfo = 1;
    req->use_cache = 1;
}

/* ---- the entry point ---------------------------------------------------- */

int jit_compile(const jit_request *req, jit_result **out, ks_status *st)
{
    *out = NULL;
    ks_clear(st);
    jit_lang lang;
    int rc = jit_check_request(req, &lang, st);
    if (rc)
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
    char hash[SHA256_HEX_LEN + 1], dir[1024], note[200];
    jit_cache_lookup(req, lang, compiler, hash, dir, sizeof dir, note, sizeof note, out);
    if (*out)
        return KS_OK;

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
