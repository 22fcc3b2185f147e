/*
 * jit_log.h: reading the compilers' logs: the line a message quotes, and
 * the per-function resources of ptxas -v (also in NVRTC's log).
 */
#ifndef KLAB_JIT_LOG_H
#define KLAB_JIT_LOG_H

#include <stddef.h>

/* Copies the first line of log containing "error" (else the first
 * non-empty line) into buf, trimmed. */
void jit_first_error(const char *log, char *buf, size_t n);

typedef struct log_fn {
    char name[256];
    int registers;
    long smem;
    long frame, spill_st, spill_ld;
    int has_regs, has_spills;
} log_fn;

typedef struct log_info {
    log_fn *fn;
    int n, cap;
} log_info;

/* Reads the ptxas -v lines of log into li (free li->fn). */
void jit_parse_log(const char *log, log_info *li);

/* The entry of function name[0..len) in li; added when create is 1. */
log_fn *jit_log_find(log_info *li, const char *name, size_t len, int create);

#endif
