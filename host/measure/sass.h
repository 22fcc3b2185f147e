/*
 * sass.h: which SASS instructions a cubin holds, and which ran.
 *
 * Three parts:
 *
 *   1. A parser for disassembler listings (`nvdisasm -c [-hex] k.cubin` or
 *      `cuobjdump -sass k.cubin`). Only address rows count: lines that start
 *      with the instruction's offset written as a C comment (slash, star,
 *      hex digits such as 0370, star, slash), then an optional predicate
 *      (@P0, @!PT) and the instruction, e.g. "HGMMA.64x8x16.F32.BF16 ..." or
 *      "BRA ...". Everything else (section headers, labels, the hex continuation lines
 *      of -hex, comments, directives) is skipped. Each row gives the
 *      function it belongs to (from `.text.<name>` section lines, or
 *      cuobjdump's `Function : <name>`), its offset, the mnemonic
 *      ("HGMMA.64x8x16.F32.BF16") and the opcode ("HGMMA": the mnemonic up
 *      to its first '.'). Pure: tested without a GPU or a disassembler.
 *   2. Running the disassembler as a subprocess on a cubin held in memory:
 *      nvdisasm first, cuobjdump second, looked up in $CUDA_HOME/bin and then
 *      in PATH (KLAB_NVDISASM / KLAB_CUOBJDUMP name one explicitly).
 *   3. The CUPTI SASS Metrics API (cupti_sass_metrics.h): executed-instruction
 *      counts per (function, pcOffset), joined with a listing of the same
 *      cubin into an executed-opcode histogram. On driver 580 a second
 *      cuptiSassMetricsSetConfig in a process fails with OUT_OF_MEMORY, so
 *      the metric is configured once per process (sass_metrics_setup) and
 *      each collection only enables, runs, flushes and disables.
 *
 * Histograms: a list of {opcode, count} in order of first appearance.
 */
#ifndef KLAB_HOST_SASS_H
#define KLAB_HOST_SASS_H

#include <stddef.h>
#include <stdint.h>

#include "driver/cuda.h"
#include "measure/profile.h"
#include "base/status.h"

#define SASS_OP_MAX 32
#define SASS_MNEM_MAX 80

typedef struct sass_row {
    size_t func;                  /* index into sass_listing.funcs */
    uint32_t offset;              /* byte offset inside the function's .text */
    char op[SASS_OP_MAX];         /* "HGMMA" */
    char mnem[SASS_MNEM_MAX];     /* "HGMMA.64x8x16.F32.BF16" (truncated if longer) */
    int predicated;               /* 1 when the row has an @P guard */
} sass_row;

typedef struct sass_listing {
    sass_row *rows;
    size_t n, cap;
    char **funcs;                 /* function names; "" for rows before any header */
    size_t nfuncs, fcap;
} sass_listing;

/* Parses text[0..len) (need not be NUL-terminated) into out, which must be
 * zeroed (or freed) before. KS_ENOMEM only. */
int sass_parse(const char *text, size_t len, sass_listing *out, ks_status *st);

void sass_listing_free(sass_listing *l);

typedef struct sass_hist_entry {
    char op[SASS_OP_MAX];
    uint64_t count;
} sass_hist_entry;

typedef struct sass_hist {
    sass_hist_entry *v;
    size_t n, cap;
} sass_hist;

void sass_hist_free(sass_hist *h);

/* Adds count to op's entry (created at the end when new). KS_ENOMEM only. */
int sass_hist_add(sass_hist *h, const char *op, uint64_t count, ks_status *st);

/* The count for op (0 when absent). */
uint64_t sass_hist_get(const sass_hist *h, const char *op);

/* The static census: every address row of l counted once under its opcode
 * (func = NULL: every function; else only that one). */
int sass_census(const sass_listing *l, const char *func, sass_hist *out, ks_status *st);

/* One executed-instruction record: an instruction of function `func` at
 * `offset` ran `count` times (warp-level). */
typedef struct sass_record {
    char *func;                   /* may be NULL: matches any function */
    uint32_t offset;
    uint64_t count;
} sass_record;

void sass_records_free(sass_record *r, size_t n);

/* The executed-opcode histogram: each record's count goes to the opcode
 * of the listing row with the same function and offset. When the listing
 * has one function, or the record has no name, the offset alone decides.
 * Records that match no row are counted in *unmatched (may be NULL), and
 * their counts in *unmatched_count (may be NULL). */
int sass_join(const sass_listing *l, const sass_record *recs, size_t n, sass_hist *out,
              size_t *unmatched, uint64_t *unmatched_count, ks_status *st);

/* ---- the disassembler ---- */

enum { SASS_TOOL_NVDISASM = 1, SASS_TOOL_CUOBJDUMP = 2 };

/* Finds a disassembler: writes its path into path (n bytes) and its kind.
 * KS_ENOTFOUND "nvdisasm not found (...)" when neither exists. */
int sass_find_tool(char *path, size_t n, int *kind, ks_status *st);

/* Disassembles the cubin image[0..n) with the tool found by sass_find_tool
 * (through a temporary file). On success *text (NUL-terminated, length
 * *len) is malloc'd and owned by the caller; tool (toolsize bytes, may be
 * NULL) receives the tool's path. KS_ENOTFOUND when there is no tool,
 * KS_ECHILD when it fails (its stderr in the message), KS_ETIMEOUT after
 * timeout_s seconds (the tool is killed), KS_EIO on file errors. */
int sass_disassemble(const void *image, size_t n, double timeout_s, char **text, size_t *len,
                     char *tool, size_t toolsize, ks_status *st);

/* The same in two halves, so that other work can run while the tool does
 * (it takes about half a second on a GEMM cubin). start writes the cubin
 * to a temporary file and starts the tool with its output going to
 * temporary files; finish waits for it (killing it after timeout_s) and
 * returns the listing as sass_disassemble does; free kills a tool still
 * running, reaps it and removes the files (NULL is fine). finish may be
 * called once; a second call is KS_EINVAL. tool: the tool's path. */
typedef struct sass_disasm sass_disasm;
int sass_disasm_start(const void *image, size_t n, sass_disasm **out, ks_status *st);
int sass_disasm_finish(sass_disasm *d, double timeout_s, char **text, size_t *len, ks_status *st);
const char *sass_disasm_tool(const sass_disasm *d);
void sass_disasm_free(sass_disasm *d);

/* ---- CUPTI SASS metrics ---- */

/* Configures smsp__sass_inst_executed (GPU granularity) for c's device,
 * once per process: later calls return the first call's result without
 * configuring again. KS_EUNSUPPORTED (CUPTI error named) when refused. */
int sass_metrics_setup(cuda_ctx *c, ks_status *st);

/* Enables SASS patching on c (lazy), calls run(ud, 0, st), synchronises,
 * flushes the per-instruction counts into *out (*n records, malloc'd; free
 * with sass_records_free) and disables patching. Needs sass_metrics_setup
 * first (it is called when it was not). Never time this run. */
int sass_metrics_collect(cuda_ctx *c, profile_pass_fn run, void *ud, sass_record **out, size_t *n,
                         ks_status *st);

#endif
