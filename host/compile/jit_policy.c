/*
 * jit_policy.c: what klab refuses before and after compiling: text that is
 * not source, device-side launches and the device heap, relocatable code
 * (in PTX, in NVRTC's log, in the cubin). Whether a target is known is
 * jit_target.c's (it asks the compilers, which call this file).
 */
#include "compile/jit_policy.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/jit_common.h"
#include "compile/jit_log.h"
#include "compile/ptx_census.h"

/* ---- text checks -------------------------------------------------------- */

/* KS_EREJECT when src is empty or not text. */
static int check_text(const jit_request *req, ks_status *st)
{
    const unsigned char *s = (const unsigned char *)req->source;
    size_t n = req->source_len;
    const char *name = jit_display_name(req);
    if (n > JIT_MAX_SOURCE)
        return ks_fail(st, KS_EREJECT, 0, "%s is too large (%zu bytes, limit %u)", name, n,
                       JIT_MAX_SOURCE);
    size_t k = 0;
    while (k < n && isspace(s[k]))
        k++;
    if (k == n)
        return ks_fail(st, KS_EREJECT, 0, "%s is empty: no PTX or CUDA source to compile", name);
    if (n >= 4 && memcmp(s, "\177ELF", 4) == 0)
        return ks_fail(st, KS_EREJECT, 0,
                       "%s is an ELF binary, not PTX or CUDA source text (klab compiles source only)",
                       name);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v')
            return ks_fail(st, KS_EREJECT, 0,
                           "%s is a binary file, not PTX or CUDA source text (byte 0x%02x at offset %zu)",
                           name, c, i);
    }
    return KS_OK;
}

jit_lang jit_detect_lang(const char *name, const char *src, size_t len)
{
    if (name) {
        if (jit_ends_with(name, ".ptx"))
            return JIT_LANG_PTX;
        if (jit_ends_with(name, ".cu") || jit_ends_with(name, ".cuh"))
            return JIT_LANG_CUDA;
    }
    /* PTX has .version and .target directives at the start of a line; CUDA
     * C++ cannot (a line starting with '.' is not C++). */
    char *s = src ? ptx_strip(src, len) : NULL;
    if (!s)
        return JIT_LANG_CUDA;
    jit_lang found = JIT_LANG_CUDA;
    for (const char *p = s; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (strncmp(p, ".version", 8) == 0 || strncmp(p, ".target", 7) == 0) {
            found = JIT_LANG_PTX;
            break;
        }
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    free(s);
    return found;
}

/* ---- forbidden constructs ----------------------------------------------- */

/* Names that mean device-side launches (dynamic parallelism) or the CUDA
 * device runtime behind them. */
static int device_launch_name(const char *s, size_t n)
{
    static const char *const prefixes[] = {
        "cudaLaunchDevice", "cudaGetParameterBuffer", "cudaCGGetIntrinsicHandle",
        "cudaCGSynchronize", "cudaCGScheduleGrid", "cudaDeviceSynchronizeDeprecationAvoidance",
        "__cudaCDP", "cudaCDP", "__cudaPushCallConfiguration", "__cnp", "cnp_", NULL,
    };
    for (int i = 0; prefixes[i]; i++) {
        size_t k = strlen(prefixes[i]);
        if (n >= k && memcmp(s, prefixes[i], k) == 0)
            return 1;
    }
    /* The device runtime's CDP entry points carry "CDP" or "cnp" as a word
     * part: __cudaCDP2Launch, cudaCDPGetParameterBuffer, __cnpLaunch... */
    for (size_t i = 0; i + 3 <= n; i++) {
        int word_start = i == 0 || s[i - 1] == '_';
        if (memcmp(s + i, "CDP", 3) == 0 && (word_start || islower((unsigned char)s[i - 1])))
            return 1;
        if (memcmp(s + i, "cnp", 3) == 0 && word_start)
            return 1;
    }
    return 0;
}

/* External functions the driver provides to whole-program code: device
 * printf and assert, which honest kernels use and nvcc builds. */
static int system_call_name(const char *s, size_t n)
{
    static const char *const names[] = {"vprintf", "__assertfail", NULL};
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && memcmp(s, names[i], n) == 0)
            return 1;
    return 0;
}

/* Device-side malloc and free: refused, because the device heap outlives a
 * launch, so a kernel could keep results there from one run to the next,
 * out of reach of the globals klab restores before every run. */
static int device_heap_name(const char *s, size_t n)
{
    return (n == 6 && memcmp(s, "malloc", 6) == 0) || (n == 4 && memcmp(s, "free", 4) == 0);
}

#define HEAP_REASON "device-side malloc/free is not allowed (the device heap outlives a launch, so state could " \
                    "carry from one run to the next): the code calls %.*s"

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$';
}

int jit_check_ptx(const char *ptx, size_t len, ks_status *st)
{
    char *s = ptx_strip(ptx, len);
    if (!s)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory checking PTX");
    int rc = KS_OK;
    for (size_t i = 0; i < len && rc == KS_OK;) {
        if (!ident_char(s[i]) || (i > 0 && (ident_char(s[i - 1]) || s[i - 1] == '%' || s[i - 1] == '.'))) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && ident_char(s[j]))
            j++;
        if (device_launch_name(s + i, j - i))
            rc = ks_fail(st, KS_EREJECT, 0,
                         "device-side kernel launch (dynamic parallelism) is not allowed: the PTX uses %.*s",
                         (int)(j - i > 80 ? 80 : j - i), s + i);
        i = j;
    }
    /* .extern .func declarations: code that expects a link step. */
    for (const char *p = s; rc == KS_OK && (p = strstr(p, ".extern")) != NULL; p += 7) {
        if (p > s && ident_char(p[-1]))
            continue;
        const char *q = p + 7;
        const char *end = q + strcspn(q, ";{");
        const char *f = strstr(q, ".func");
        if (!f || f >= end)
            continue;       /* .extern .shared and friends: not a function */
        q = f + 5;
        while (q < end && isspace((unsigned char)*q))
            q++;
        if (q < end && *q == '(') {     /* return parameter */
            int depth = 0;
            for (; q < end; q++) {
                if (*q == '(')
                    depth++;
                else if (*q == ')' && --depth == 0) {
                    q++;
                    break;
                }
            }
            while (q < end && isspace((unsigned char)*q))
                q++;
        }
        const char *nb = q;
        while (q < end && ident_char(*q))
            q++;
        size_t nlen = (size_t)(q - nb);
        if (nlen && system_call_name(nb, nlen))
            continue;
        if (nlen && device_heap_name(nb, nlen)) {
            rc = ks_fail(st, KS_EREJECT, 0, HEAP_REASON, (int)nlen, nb);
            break;
        }
        rc = ks_fail(st, KS_EREJECT, 0,
                     "unresolved external function %.*s: relocatable code is not allowed "
                     "(whole-program kernels only, every function must have a body)",
                     (int)(nlen > 80 ? 80 : nlen), nlen ? nb : "?");
    }
    free(s);
    return rc;
}

/* Checks the cubin klab would load. */
int jit_check_cubin(const cubin_info *ci, ks_status *st)
{
    if (ci->elf_type != 2 /* ET_EXEC */)
        return ks_fail(st, KS_EREJECT, 0,
                       "the cubin is relocatable (ELF type %d, not ET_EXEC): whole-program code only",
                       ci->elf_type);
    for (int i = 0; i < ci->nsymbols; i++) {
        const cubin_symbol *s = &ci->symbols[i];
        size_t n = strlen(s->name);
        if (device_launch_name(s->name, n))
            return ks_fail(st, KS_EREJECT, 0,
                           "device-side kernel launch (dynamic parallelism) is not allowed: the cubin has symbol %s",
                           s->name);
        if (s->undefined && device_heap_name(s->name, n))
            return ks_fail(st, KS_EREJECT, 0, HEAP_REASON, (int)n, s->name);
        /* Weak undefined .nv.reservedSmem.* symbols and the driver's own
         * system calls (printf, assert) are resolved at load; any other
         * global undefined symbol needs a link step. */
        if (s->undefined && n && s->bind == 1 /* STB_GLOBAL */ && strncmp(s->name, ".nv.", 4) != 0 &&
            !system_call_name(s->name, n))
            return ks_fail(st, KS_EREJECT, 0,
                           "the cubin has an unresolved symbol %s: relocatable code is not allowed",
                           s->name);
    }
    if (ci->nkernels == 0)
        return ks_fail(st, KS_EREJECT, 0, "no kernel entry point (.entry / __global__) in the code");
    return KS_OK;
}


/* Maps NVRTC log text that means "klab refuses this" to a rejection. */
int jit_nvrtc_reject_reason(const char *log, const char *arch, ks_status *st)
{
    char first[300];
    jit_first_error(log, first, sizeof first);
    if (strstr(log, "invalid value for --gpu-architecture") || strstr(log, "invalid value for -arch"))
        return ks_fail(st, KS_EREJECT, 0, "NVRTC does not know the target %s: %s", arch, first);
    /* A device-side launch however it is spelled: the device runtime's
     * entry points (cudaGetParameterBuffer, __cudaCDP2*, cudaLaunchDevice)
     * appear in the log as the names ptxas could not resolve. */
    for (const char *p = log; *p;) {
        if (!ident_char(*p)) {
            p++;
            continue;
        }
        const char *q = p;
        while (*q && ident_char(*q))
            q++;
        if (device_launch_name(p, (size_t)(q - p)))
            return ks_fail(st, KS_EREJECT, 0,
                           "device-side kernel launch (dynamic parallelism) is not allowed: the code uses %.*s",
                           (int)(q - p > 80 ? 80 : q - p), p);
        if (device_heap_name(p, (size_t)(q - p)) && strstr(log, "nresolved"))
            return ks_fail(st, KS_EREJECT, 0, HEAP_REASON, (int)(q - p), p);
        p = q;
    }
    if (strstr(log, "relocatable device code") || strstr(log, "-rdc=true") ||
        strstr(log, "dynamic parallelism") || strstr(log, "device-side kernel launch"))
        return ks_fail(st, KS_EREJECT, 0,
                       "device-side kernel launch (dynamic parallelism) or relocatable code is not allowed: %s",
                       first);
    return KS_OK;
}

/* ---- targets ------------------------------------------------------------ */

/* ---- the request -------------------------------------------------------- */

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

int jit_check_request(const jit_request *req, jit_lang *lang, ks_status *st)
{
    if (!req || !req->source)
        return ks_fail(st, KS_EINVAL, 0, "jit_compile: no source");
    if (!req->arch || !*req->arch)
        return ks_fail(st, KS_EINVAL, 0, "jit_compile: no target arch (for example sm_90a)");
    if (req->noptions < 0 || (req->noptions > 0 && !req->options))
        return ks_fail(st, KS_EINVAL, 0, "jit_compile: bad option list");
    int rc = check_text(req, st);
    if (rc)
        return rc;
    *lang = req->lang;
    if (*lang != JIT_LANG_PTX && *lang != JIT_LANG_CUDA)
        *lang = jit_detect_lang(req->name, req->source, req->source_len);
    if ((rc = check_options(req, *lang, st)))
        return rc;
    if (*lang == JIT_LANG_PTX)
        return jit_check_ptx(req->source, req->source_len, st);
    return KS_OK;
}
