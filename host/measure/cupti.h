/*
 * cupti.h: the one loader of libcupti, shared by the activity records
 * (cupti_act), the Range Profiler (profile) and SASS metrics (sass), and
 * the one way a CUPTI failure is said.
 */
#ifndef KLAB_CUPTI_H
#define KLAB_CUPTI_H

#include <stddef.h>

#include "base/status.h"
#include "driver/dynlib.h"

/* libcupti, loaded once (profiler: the profiling APIs, which need
 * libnvperf_host/target, preloaded here, and are refused in the
 * AddressSanitizer build). NULL with st filled when it cannot be loaded. */
const dynlib *cupti_lib(int profiler, ks_status *st);

/* cupti_lib, then dynlib_bind of syms. */
int cupti_bind(const dynlib_symbol *syms, size_t n, int profiler, ks_status *st);

/* KS_EUNSUPPORTED in builds where the profiling APIs cannot be used at all
 * (AddressSanitizer: libcupti's RTLD_DEEPBIND dlopen aborts it); else KS_OK. */
int cupti_profiler_blocked(ks_status *st);

/* The name of a CUptiResult ("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"). */
const char *cupti_result_name(int r);

/* Fills st for a failed CUPTI call r of `what`, naming the error:
 * KS_EUNSUPPORTED (CUPTI refusing is a property of the machine: privileges,
 * another profiler, no driver), KS_ENOMEM for out-of-memory. text is what
 * cuptiGetResultString said (NULL if nothing), added when it says more than
 * the name. Returns the code. */
int cupti_fail_text(ks_status *st, int r, const char *what, const char *text);

/* The same, asking CUPTI for the text. */
int cupti_fail(ks_status *st, int r, const char *what);

#endif
