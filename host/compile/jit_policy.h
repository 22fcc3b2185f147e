/*
 * jit_policy.h: what klab refuses before and after compiling (jit.h has
 * the public jit_check_ptx and jit_detect_lang).
 */
#ifndef KLAB_JIT_POLICY_H
#define KLAB_JIT_POLICY_H

#include "compile/cubin.h"
#include "compile/jit.h"

/* Checks a request before anything compiles it: KS_EINVAL for a missing
 * source or target, a bad option list or an option klab sets itself;
 * KS_EREJECT for text that is too large, empty or not text, and for PTX
 * that launches kernels from the device or needs a link step. *lang gets
 * the language (req->lang, else from the name or content). */
int jit_check_request(const jit_request *req, jit_lang *lang, ks_status *st);

/* KS_EREJECT when the cubin is relocatable, launches kernels from the
 * device, uses the device heap, needs a link step or has no kernel. */
int jit_check_cubin(const cubin_info *ci, ks_status *st);

/* Maps NVRTC log text that means "klab refuses this" to KS_EREJECT;
 * KS_OK otherwise. */
int jit_nvrtc_reject_reason(const char *log, const char *arch, ks_status *st);

#endif
