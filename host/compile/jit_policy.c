/*
 * jit_policy.c: what klab refuses before and after compiling: text that is
 * not source, device-side launches and the device heap, relocatable code
 * (in PTX, in NVRTC's log, in the cubin), and targets the compilers do not
 * know.
 */
#include "compile/jit_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/ptx_census.h"

/* ---- text checks -------------------------------------------------------- */

/* KS_EREJECT when src is empty or not text. */
int jit_check_text(const jit_request *req, ks_status *st)
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

/* "sm_" + 2 or 3 digits + optional 'a' or 'f'. */
static int arch_syntax(const char *arch, int *number)
{
    if (strncmp(arch, "sm_", 3) != 0)
        return 0;
    const char *p = arch + 3;
    int digits = 0, v = 0;
    while (isdigit((unsigned char)*p) && digits < 4) {
        v = v * 10 + (*p - '0');
        p++;
        digits++;
    }
    if (digits < 2 || digits > 3)
        return 0;
    if (*p == 'a' || *p == 'f')
        p++;
    if (*p)
        return 0;
    *number = v;
    return 1;
}

int jit_check_arch(const char *arch, jit_lang lang, ks_status *st)
{
    int number = 0;
    if (!arch || !*arch)
        return ks_fail(st, KS_EINVAL, 0, "no target arch given (for example sm_90a)");
    if (!arch_syntax(arch, &number))
        return ks_fail(st, KS_EREJECT, 0,
                       "'%.40s' is not a GPU target name (expected sm_XY with an optional a or f suffix, e.g. sm_90a)",
                       arch);
    ptxas_facts f;
    ks_status pst;
    ks_clear(&pst);
    int have_ptxas = jit_ptxas_facts(&f, &pst) == KS_OK;
    if (lang == JIT_LANG_PTX && !have_ptxas) {
        *st = pst;
        return pst.code;
    }
    if (have_ptxas && f.targets) {
        char key[48];
        snprintf(key, sizeof key, " %s ", arch);
        int known = strstr(f.targets, key) != NULL;
        if (!known) {
            /* Trim the list for the message: it is long. */
            size_t tl = strlen(f.targets);
            int show = tl > 2 ? (int)(tl - 2 > 300 ? 300 : tl - 2) : 0;
            ks_fail(st, KS_EREJECT, 0, "ptxas %s does not know the target %s; it knows: %.*s",
                    f.version, arch, show, f.targets + 1);
            free(f.targets);
            return st->code;
        }
    }
    if (have_ptxas)
        free(f.targets);
    if (lang == JIT_LANG_CUDA) {
        const nvrtc_api *api;
        int rc = jit_nvrtc_load(&api, st);
        if (rc)
            return rc;
        int n = 0;
        if (api->num_archs(&n) != 0 || n <= 0 || n > 256)
            return KS_OK;       /* cannot ask: let the compile decide */
        int list[256];
        if (api->archs(list) != 0)
            return KS_OK;
        char known[600];
        size_t kl = 0;
        known[0] = '\0';
        for (int i = 0; i < n; i++) {
            if (list[i] == number)
                return KS_OK;
            if (kl < sizeof known - 8)
                kl += (size_t)snprintf(known + kl, sizeof known - kl, " sm_%d", list[i]);
        }
        return ks_fail(st, KS_EREJECT, 0, "NVRTC %s does not know the target %s; it knows:%s",
                       api->version_str, arch, known);
    }
    return KS_OK;
}

