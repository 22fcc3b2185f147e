/*
 * jit_target.c: whether the compilers know a target, by asking them (ptxas
 * --help lists its targets; NVRTC has nvrtcGetSupportedArchs).
 */
#include "compile/jit.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/jit_nvrtc.h"
#include "compile/jit_ptxas.h"

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
