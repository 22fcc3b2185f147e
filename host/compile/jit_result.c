/*
 * jit_result.c: a compile result: made, given its log, freed, and filled
 * from its cubin (kernels, resources, parameters), PTX census and hash.
 */
#include "compile/jit_result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/cubin.h"
#include "compile/jit_common.h"
#include "compile/jit_log.h"
#include "compile/jit_policy.h"
#include "compile/ptx_census.h"

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
