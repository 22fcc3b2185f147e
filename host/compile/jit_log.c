/*
 * jit_log.c: reading the compilers' logs: the line a message quotes, and
 * the per-function resources of ptxas -v (also in NVRTC's log).
 */
#include "compile/jit_log.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jit_first_error(const char *log, char *buf, size_t n)
{
    const char *best = NULL, *first = NULL;
    for (const char *p = log; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int blank = 1;
        for (size_t i = 0; i < len; i++)
            if (!isspace((unsigned char)p[i]))
                blank = 0;
        /* ptxas ends every failure with this summary; the cause is above. */
        if (!blank && len >= 34 && memmem(p, len, "Ptx assembly aborted due to errors", 34))
            blank = 1;
        if (!blank && !first)
            first = p;
        if (!blank && !best) {
            for (size_t i = 0; i + 5 <= len; i++)
                if (strncmp(p + i, "error", 5) == 0 || strncmp(p + i, "fatal", 5) == 0) {
                    best = p;
                    break;
                }
        }
        p = e ? e + 1 : NULL;
    }
    const char *s = best ? best : first;
    if (!s) {
        snprintf(buf, n, "(no compiler output)");
        return;
    }
    while (isspace((unsigned char)*s))
        s++;
    size_t len = strcspn(s, "\n");
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (len >= n)
        len = n - 1;
    memcpy(buf, s, len);
    buf[len] = '\0';
}

/* ---- ptxas -v log ------------------------------------------------------- */

log_fn *jit_log_find(log_info *li, const char *name, size_t len, int create)
{
    for (int i = 0; i < li->n; i++)
        if (strlen(li->fn[i].name) == len && memcmp(li->fn[i].name, name, len) == 0)
            return &li->fn[i];
    if (!create || len >= sizeof li->fn[0].name)
        return NULL;
    if (li->n == li->cap) {
        int nc = li->cap ? li->cap * 2 : 8;
        log_fn *nf = realloc(li->fn, sizeof *nf * (size_t)nc);
        if (!nf)
            return NULL;
        li->fn = nf;
        li->cap = nc;
    }
    log_fn *f = &li->fn[li->n++];
    memset(f, 0, sizeof *f);
    memcpy(f->name, name, len);
    f->name[len] = '\0';
    return f;
}

/* The number right before the text at p (e.g. "4000" in "4000 bytes smem"). */
static long number_before(const char *line_start, const char *p)
{
    while (p > line_start && p[-1] == ' ')
        p--;
    const char *e = p;
    while (p > line_start && isdigit((unsigned char)p[-1]))
        p--;
    return p == e ? -1 : strtol(p, NULL, 10);
}

/* Reads the ptxas -v lines (also in NVRTC's log):
 *   ptxas info : Compiling entry function 'k' for 'sm_90a'
 *   ptxas info : Function properties for k
 *       416 bytes stack frame, 532 bytes spill stores, 532 bytes spill loads
 *   ptxas info : Used 24 registers, used 1 barriers, ..., 4000 bytes smem */
void jit_parse_log(const char *log, log_info *li)
{
    char entry[256] = "", props[256] = "";
    for (const char *p = log; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char line[1024];
        if (len >= sizeof line)
            len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = '\0';
        const char *q;
        if ((q = strstr(line, "Compiling entry function '")) != NULL) {
            q += strlen("Compiling entry function '");
            size_t n = strcspn(q, "'");
            snprintf(entry, sizeof entry, "%.*s", (int)(n < 255 ? n : 255), q);
        } else if ((q = strstr(line, "Function properties for ")) != NULL) {
            q += strlen("Function properties for ");
            size_t n = strcspn(q, " \r");
            snprintf(props, sizeof props, "%.*s", (int)(n < 255 ? n : 255), q);
        } else if ((q = strstr(line, "bytes stack frame")) != NULL && props[0]) {
            log_fn *f = jit_log_find(li, props, strlen(props), 1);
            if (f) {
                const char *a = strstr(line, "bytes spill stores");
                const char *b = strstr(line, "bytes spill loads");
                f->frame = number_before(line, q);
                f->spill_st = a ? number_before(line, a) : -1;
                f->spill_ld = b ? number_before(line, b) : -1;
                f->has_spills = 1;
            }
        } else if ((q = strstr(line, "Used ")) != NULL && strstr(line, " registers") && entry[0]) {
            log_fn *f = jit_log_find(li, entry, strlen(entry), 1);
            if (f) {
                f->registers = (int)strtol(q + 5, NULL, 10);
                f->has_regs = 1;
                const char *s = strstr(line, "bytes smem");
                f->smem = s ? number_before(line, s) : 0;
            }
        }
        p = e ? e + 1 : NULL;
    }
}
