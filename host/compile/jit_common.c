/*
 * jit_common.c: what every part of the compiler shares (see jit_common.h
 * for the floors of host/compile).
 */
#include "compile/jit_common.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "driver/dynlib.h"

void jit_toolkit_roots(char roots[][4096], int *n)
{
    *n = 0;
    char p[4096];
    snprintf(p, sizeof p, "%s/include", dynlib_cuda_home());
    if (realpath(p, roots[*n]))
        (*n)++;
    snprintf(p, sizeof p, "%s/include/cccl", dynlib_cuda_home());
    if (*n < JIT_TOOLKIT_MAX_ROOTS && realpath(p, roots[*n]))
        (*n)++;
}

void jit_include_roots(const jit_request *req, char roots[][4096], int *n)
{
    jit_toolkit_roots(roots, n);
    if (req->include_dir && *req->include_dir && realpath(req->include_dir, roots[*n]))
        (*n)++;
}

char *jit_dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

const char *jit_display_name(const jit_request *req)
{
    return req->name && *req->name ? req->name : "<source>";
}

int jit_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

int jit_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

unsigned char *jit_read_file(const char *path, size_t limit, size_t *len)
{
    char *b = NULL;
    ks_status ignored;
    if (fs_read(path, limit, 0, &b, len, &ignored) != KS_OK)
        return NULL;
    return (unsigned char *)b;
}

void jit_bound_text(char **text, size_t *len, size_t max)
{
    if (!*text || *len <= max)
        return;
    size_t head = max / 2, tail = max / 2 - 64;
    const char *s = *text;
    for (size_t k = head; k > head / 2; k--)
        if (s[k - 1] == '\n') {
            head = k;
            break;
        }
    size_t tstart = *len - tail;
    for (size_t k = tstart; k < *len && k < tstart + tail / 2; k++)
        if (s[k] == '\n') {
            tstart = k + 1;
            break;
        }
    char mark[64];
    int ml = snprintf(mark, sizeof mark, "[... %zu bytes cut]\n", tstart - head);
    size_t nlen = head + (size_t)ml + (*len - tstart);
    char *b = malloc(nlen + 1);
    if (!b)
        return;
    memcpy(b, s, head);
    memcpy(b + head, mark, (size_t)ml);
    memcpy(b + head + (size_t)ml, s + tstart, *len - tstart);
    b[nlen] = '\0';
    free(*text);
    *text = b;
    *len = nlen;
}

const char *jit_lang_name(jit_lang lang)
{
    switch (lang) {
    case JIT_LANG_PTX: return "ptx";
    case JIT_LANG_CUDA: return "cuda";
    default: return "auto";
    }
}

int jit_limit_failure(const jit_request *req, const spawn_result *r, ks_status *st)
{
    char lim[64];
    if (req->limit_memory > 0) {
        spawn_format_bytes(req->limit_memory, lim, sizeof lim);
        if (r->end == SPAWN_OVER_MEMORY)
            return ks_fail(st, KS_ECOMPILE, 0, "%s: the compiler exceeded its %s memory limit",
                           jit_display_name(req), lim);
    }
    if (req->limit_cpu_s > 0 && r->signal == SIGXCPU)
        return ks_fail(st, KS_ECOMPILE, 0, "%s: the compiler exceeded its %d s CPU limit", jit_display_name(req),
                       req->limit_cpu_s);
    return KS_OK;
}
