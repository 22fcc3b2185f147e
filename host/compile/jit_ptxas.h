/*
 * jit_ptxas.h: PTX through ptxas (jit.h has jit_ptxas_path and
 * jit_ptxas_version).
 */
#ifndef KLAB_JIT_PTXAS_H
#define KLAB_JIT_PTXAS_H

#include "compile/jit.h"

/* Facts about one ptxas binary, asked once per process and path. */
typedef struct ptxas_facts {
    char path[1024];
    char version[64];
    char *targets;      /* " sm_75 sm_80 ... " (space-delimited, padded); free it */
} ptxas_facts;

int jit_ptxas_facts(ptxas_facts *f, ks_status *st);

/* Assembles req (PTX) into r: cubin, PTX, log, compile time. */
int jit_compile_ptx(const jit_request *req, jit_result *r, ks_status *st);

#endif
