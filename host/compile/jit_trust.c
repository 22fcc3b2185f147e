/*
 * jit_trust.c: whose code a request compiles, and the limits it compiles
 * under (see jit_request_trust in jit.h).
 */
#include "compile/jit.h"

#include <string.h>

#include "driver/devkern.h"

/* klab's own device code: the judge kernels embedded from
 * host/driver/kernels, exactly as klab.judge.source() builds them (the
 * prelude, one #line directive, the judge source). Anything else, a task's
 * reference included, is a candidate. */
static int klab_source(const char *src, size_t len)
{
    size_t np, nj;
    const char *pre = devkern_prelude(&np);
    const char *judge = devkern_source(&nj);
    if (!src || !pre || !judge || len < np + nj || len - np - nj > 64)
        return 0;
    if (memcmp(src, pre, np) != 0 || memcmp(src + len - nj, judge, nj) != 0)
        return 0;
    /* Between them: one #line directive and blank space, nothing else. */
    const char *m = src + np, *e = src + len - nj;
    while (m < e && (*m == '\n' || *m == ' '))
        m++;
    if (e - m < 6 || memcmp(m, "#line ", 6) != 0)
        return 0;
    for (const char *q = m; q < e; q++)
        if (*q == '\n' && q + 1 < e)
            return 0;
    return 1;
}

int jit_request_trust(jit_request *req, const jit_limits *asked, ks_status *st)
{
    req->trusted = klab_source(req->source, req->source_len);
    req->limit_memory = req->trusted ? 0 : JIT_CANDIDATE_MEMORY;
    req->limit_cpu_s = req->trusted ? 0 : JIT_CANDIDATE_CPU_S;
    if (!asked)
        return KS_OK;
    long long memory = asked->has_memory ? asked->memory : req->limit_memory;
    long long cpu = asked->has_cpu ? asked->cpu_s : req->limit_cpu_s;
    if (memory < 0 || cpu < 0 || cpu > 86400)
        return ks_fail(st, KS_EINVAL, 0, "limits must be positive (memory bytes, cpu seconds up to 86400)");
    req->limit_memory = memory;
    req->limit_cpu_s = (int)cpu;
    return KS_OK;
}
