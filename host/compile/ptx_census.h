/*
 * ptx_census.h: counts PTX instruction statements by family.
 *
 * A census shows whether a candidate even contains the instructions a task
 * is about (wgmma and TMA on sm_90a, tcgen05 on sm_100a) before anything
 * runs. Only instruction statements count: comments, string literals,
 * directives (.reg, .entry, ...) and labels do not. A statement is counted
 * in every family whose prefix it matches, so "tcgen05.mma.cta_group::1"
 * counts in both "tcgen05" and "tcgen05.mma".
 */
#ifndef KLAB_HOST_PTX_CENSUS_H
#define KLAB_HOST_PTX_CENSUS_H

#include <stddef.h>

enum ptx_family {
    PTX_WGMMA,                  /* wgmma.mma_async / fence / commit_group / wait_group */
    PTX_CP_ASYNC_BULK_TENSOR,   /* cp.async.bulk.tensor, cp.async.bulk.prefetch.tensor,
                                   cp.reduce.async.bulk.tensor (TMA) */
    PTX_CP_ASYNC_BULK,          /* other cp.async.bulk.* and cp.reduce.async.bulk.* */
    PTX_CP_ASYNC,               /* cp.async.* that is not bulk (Ampere async copies) */
    PTX_MBARRIER,               /* mbarrier.* */
    PTX_SETMAXNREG,             /* setmaxnreg.* */
    PTX_STMATRIX,               /* stmatrix.* */
    PTX_LDMATRIX,               /* ldmatrix.* */
    PTX_MMA_SYNC,               /* mma.sync.* (warp-level MMA) */
    PTX_TCGEN05,                /* every tcgen05.* */
    PTX_TCGEN05_MMA,            /* tcgen05.mma* */
    PTX_TCGEN05_ALLOC,          /* tcgen05.alloc, .dealloc, .relinquish_alloc_permit */
    PTX_TCGEN05_LD,             /* tcgen05.ld* */
    PTX_TCGEN05_ST,             /* tcgen05.st* */
    PTX_TCGEN05_CP,             /* tcgen05.cp* */
    PTX_ELECT_SYNC,             /* elect.sync */
    PTX_BARRIER_CLUSTER,        /* barrier.cluster.* */
    PTX_FENCE_PROXY_ASYNC,      /* fence.proxy.async* */
    PTX_NFAMILIES
};

typedef struct ptx_census {
    long count[PTX_NFAMILIES];
    long instructions;          /* all instruction statements */
} ptx_census;

/* Stable family name ("wgmma", "cp.async.bulk.tensor", ...); NULL when out of range. */
const char *ptx_family_name(int family);

/* Counts the instruction statements of text[0..len). Never fails; text
 * need not be NUL-terminated. */
void ptx_census_count(const char *text, size_t len, ptx_census *out);

/* A copy of text[0..len) (NUL-terminated, same length) in which comments
 * and string literals are replaced by spaces (newlines kept, so line
 * numbers still hold). NULL when out of memory. Free with free(). */
char *ptx_strip(const char *text, size_t len);

#endif
