/*
 * ptx_census.c: PTX instruction census (see ptx_census.h).
 *
 * PTX statements end with ';'. Braces open and close blocks (function
 * bodies, scoped { .reg ...; } groups) and are separators too. A statement
 * may begin with labels ("L1:") and a guard ("@%p1", "@!p"); after them the
 * first token is the opcode. Directives start with '.', and anything whose
 * first token is not a lowercase opcode (initialiser lists such as
 * "{1, 2, 3}") is not an instruction.
 */
#include "compile/ptx_census.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const family_names[PTX_NFAMILIES] = {
    [PTX_WGMMA] = "wgmma",
    [PTX_CP_ASYNC_BULK_TENSOR] = "cp.async.bulk.tensor",
    [PTX_CP_ASYNC_BULK] = "cp.async.bulk",
    [PTX_CP_ASYNC] = "cp.async",
    [PTX_MBARRIER] = "mbarrier",
    [PTX_SETMAXNREG] = "setmaxnreg",
    [PTX_STMATRIX] = "stmatrix",
    [PTX_LDMATRIX] = "ldmatrix",
    [PTX_MMA_SYNC] = "mma.sync",
    [PTX_TCGEN05] = "tcgen05",
    [PTX_TCGEN05_MMA] = "tcgen05.mma",
    [PTX_TCGEN05_ALLOC] = "tcgen05.alloc",
    [PTX_TCGEN05_LD] = "tcgen05.ld",
    [PTX_TCGEN05_ST] = "tcgen05.st",
    [PTX_TCGEN05_CP] = "tcgen05.cp",
    [PTX_ELECT_SYNC] = "elect.sync",
    [PTX_BARRIER_CLUSTER] = "barrier.cluster",
    [PTX_FENCE_PROXY_ASYNC] = "fence.proxy.async",
};

const char *ptx_family_name(int f)
{
    return f >= 0 && f < PTX_NFAMILIES ? family_names[f] : NULL;
}

char *ptx_strip(const char *s, size_t n)
{
    char *o = malloc(n + 1);
    if (!o)
        return NULL;
    size_t i = 0;
    while (i < n) {
        if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                o[i++] = ' ';
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
            o[i++] = ' ';
            o[i++] = ' ';
            while (i < n && !(s[i] == '*' && i + 1 < n && s[i + 1] == '/')) {
                o[i] = s[i] == '\n' ? '\n' : ' ';
                i++;
            }
            for (int k = 0; k < 2 && i < n; k++)
                o[i++] = ' ';
        } else if (s[i] == '"') {
            o[i++] = ' ';
            while (i < n && s[i] != '"' && s[i] != '\n') {
                if (s[i] == '\\' && i + 1 < n && s[i + 1] != '\n')
                    o[i++] = ' ';
                o[i++] = ' ';
            }
            if (i < n && s[i] == '"')
                o[i++] = ' ';
        } else {
            /* NUL bytes would end the string early for later scans. */
            o[i] = s[i] ? s[i] : ' ';
            i++;
        }
    }
    o[n] = '\0';
    return o;
}

static int starts(const char *op, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(op, prefix, k) == 0;
}

static int is_ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '%';
}

/* Classifies one opcode (op[0..n), e.g. "wgmma.mma_async.sync.aligned..."). */
static void classify(const char *op, size_t n, ptx_census *c)
{
    c->instructions++;
#define HIT(f) (c->count[f]++)
    if (starts(op, n, "wgmma."))
        HIT(PTX_WGMMA);
    if (starts(op, n, "cp.async.bulk.tensor") || starts(op, n, "cp.async.bulk.prefetch.tensor") ||
        starts(op, n, "cp.reduce.async.bulk.tensor"))
        HIT(PTX_CP_ASYNC_BULK_TENSOR);
    else if (starts(op, n, "cp.async.bulk") || starts(op, n, "cp.reduce.async.bulk"))
        HIT(PTX_CP_ASYNC_BULK);
    else if (starts(op, n, "cp.async."))
        HIT(PTX_CP_ASYNC);
    if (starts(op, n, "mbarrier."))
        HIT(PTX_MBARRIER);
    if (starts(op, n, "setmaxnreg."))
        HIT(PTX_SETMAXNREG);
    if (starts(op, n, "stmatrix."))
        HIT(PTX_STMATRIX);
    if (starts(op, n, "ldmatrix."))
        HIT(PTX_LDMATRIX);
    if (starts(op, n, "mma.sync."))
        HIT(PTX_MMA_SYNC);
    if (starts(op, n, "tcgen05.")) {
        HIT(PTX_TCGEN05);
        if (starts(op, n, "tcgen05.mma"))
            HIT(PTX_TCGEN05_MMA);
        else if (starts(op, n, "tcgen05.alloc") || starts(op, n, "tcgen05.dealloc") ||
                 starts(op, n, "tcgen05.relinquish_alloc_permit"))
            HIT(PTX_TCGEN05_ALLOC);
        else if (starts(op, n, "tcgen05.ld"))
            HIT(PTX_TCGEN05_LD);
        else if (starts(op, n, "tcgen05.st"))
            HIT(PTX_TCGEN05_ST);
        else if (starts(op, n, "tcgen05.cp"))
            HIT(PTX_TCGEN05_CP);
    }
    if (starts(op, n, "elect.sync"))
        HIT(PTX_ELECT_SYNC);
    if (starts(op, n, "barrier.cluster."))
        HIT(PTX_BARRIER_CLUSTER);
    if (starts(op, n, "fence.proxy.async"))
        HIT(PTX_FENCE_PROXY_ASYNC);
#undef HIT
}

/* Skips labels ("L1:") and guards ("@p", "@!%p1") at s[i..n); returns the
 * index of the first token after them. */
static size_t skip_prefix(const char *s, size_t i, size_t n)
{
    for (;;) {
        while (i < n && isspace((unsigned char)s[i]))
            i++;
        if (i >= n)
            return i;
        size_t j = i;
        while (j < n && is_ident_char(s[j]))
            j++;
        /* A label is an identifier followed by ':' but not '::'. */
        if (j > i && j < n && s[j] == ':' && !(j + 1 < n && s[j + 1] == ':')) {
            i = j + 1;
            continue;
        }
        if (s[i] == '@') {
            while (i < n && !isspace((unsigned char)s[i]))
                i++;
            continue;
        }
        return i;
    }
}

/* Classifies the token at s[i..j) if it looks like an opcode: a lowercase
 * letter, then letters, digits, '.', '_' and "::" (qualifiers may hold
 * capitals: .L2::cache_hint). Anything else (initialiser values, stray
 * identifiers) is not an instruction. */
static void opcode(const char *s, size_t i, size_t j, ptx_census *c)
{
    if (i >= j || !islower((unsigned char)s[i]))
        return;
    for (size_t k = i; k < j; k++) {
        char ch = s[k];
        if (!(isalpha((unsigned char)ch) || isdigit((unsigned char)ch) || ch == '.' || ch == '_' ||
              ch == ':'))
            return;
    }
    classify(s + i, j - i, c);
}

void ptx_census_count(const char *text, size_t len, ptx_census *out)
{
    memset(out, 0, sizeof *out);
    char *s = ptx_strip(text, len);
    if (!s)
        return;
    size_t i = 0;
    while (i < len) {
        i = skip_prefix(s, i, len);
        if (i >= len)
            break;
        if (s[i] == '{' || s[i] == '}' || s[i] == ';') {
            i++;            /* block delimiters and empty statements */
            continue;
        }
        size_t j = i;
        while (j < len && !isspace((unsigned char)s[j]) && s[j] != ';' && s[j] != '{' &&
               s[j] != '}' && s[j] != ',')
            j++;
        if (s[i] == '.' && ((j - i == 4 && memcmp(s + i, ".loc", 4) == 0) ||
                            (j - i == 5 && memcmp(s + i, ".file", 5) == 0))) {
            /* Debug directives (-lineinfo) end at the newline, not at ';'. */
            while (j < len && s[j] != '\n')
                j++;
            i = j;
            continue;
        }
        if (s[i] == '.') {
            /* A directive ends at ';', or at the '{' that opens a body
             * unless it has an initialiser ("= {1, 2}"). */
            int init = 0;
            while (j < len && s[j] != ';' && (init || (s[j] != '{' && s[j] != '}'))) {
                if (s[j] == '=')
                    init = 1;
                j++;
            }
            i = j;
            continue;
        }
        /* An instruction ends at ';'; braces inside are operand vectors. A
         * fragment with no ';' (truncated text) does not count. */
        size_t end = j;
        while (end < len && s[end] != ';')
            end++;
        if (end < len)
            opcode(s, i, j, out);
        i = end + 1;
    }
    free(s);
}
