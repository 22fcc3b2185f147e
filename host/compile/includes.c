/* includes.c: the include check of candidate CUDA sources (see includes.h). */
#include "compile/includes.h"
#include "compile/std_headers.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "driver/dynlib.h"

void includes_toolkit_roots(char roots[][4096], int *n)
{
    *n = 0;
    char p[4096];
    snprintf(p, sizeof p, "%s/include", dynlib_cuda_home());
    if (realpath(p, roots[*n]))
        (*n)++;
    snprintf(p, sizeof p, "%s/include/cccl", dynlib_cuda_home());
    if (*n < INCLUDES_MAX_ROOTS && realpath(p, roots[*n]))
        (*n)++;
}

/* A #line directive: from pos on, the physical line phys is line `line`
 * of file `file` ("" keeps the name). */
typedef struct line_mark {
    size_t pos;
    long phys, line;
    char file[256];
} line_mark;

#define MAX_LINE_MARKS 64

/* The source after splicing, and where lines were spliced away. */
typedef struct lx {
    char *s;
    size_t n, pos;
    size_t *spl;      /* positions in s where a backslash-newline was removed */
    size_t nspl;
    const char *name;
    char (*roots)[4096];
    int nroots;
    ks_status *st;
    line_mark marks[MAX_LINE_MARKS];
    int nmarks;
} lx;

/* The physical line (1-based, of the original text) of position pos of s. */
static long phys_line(const lx *x, size_t pos)
{
    long line = 1;
    for (size_t i = 0; i < pos && i < x->n; i++)
        if (x->s[i] == '\n' || (x->s[i] == '\r' && (i + 1 >= x->n || x->s[i + 1] != '\n')))
            line++;
    for (size_t i = 0; i < x->nspl && x->spl[i] <= pos; i++)
        line++;
    return line;
}

static int at(const lx *x, size_t k)
{
    return x->pos + k < x->n ? (unsigned char)x->s[x->pos + k] : -1;
}

static int is_newline(const lx *x, size_t k)
{
    int c = at(x, k);
    return c == '\n' || c == '\r';
}

static int ident_start(int c) { return c == '_' || c == '$' || isalpha(c) || c >= 0x80 || c == '\\'; }
static int ident_char(int c) { return ident_start(c) || isdigit(c); }

/* Skips a block comment starting at pos ("/" "*"); 1 when it held a newline. */
static int skip_block_comment(lx *x)
{
    int nl = 0;
    x->pos += 2;
    while (x->pos < x->n) {
        if (x->s[x->pos] == '*' && at(x, 1) == '/') {
            x->pos += 2;
            return nl;
        }
        if (is_newline(x, 0))
            nl = 1;
        x->pos++;
    }
    return nl;
}

static void skip_line_comment(lx *x)
{
    while (x->pos < x->n && !is_newline(x, 0))
        x->pos++;
}

/* A quoted literal ending at the same quote or at the end of the line. */
static void skip_quoted(lx *x, char q)
{
    x->pos++;
    while (x->pos < x->n && !is_newline(x, 0)) {
        char c = x->s[x->pos];
        if (c == '\\' && x->pos + 1 < x->n && !is_newline(x, 1)) {
            x->pos += 2;
            continue;
        }
        x->pos++;
        if (c == q)
            return;
    }
}

/* Horizontal space and comments within one line; 0 at a newline or EOF. */
static void skip_hspace(lx *x)
{
    for (;;) {
        int c = at(x, 0);
        if (c == ' ' || c == '\t' || c == '\f' || c == '\v')
            x->pos++;
        else if (c == '/' && at(x, 1) == '*')
            skip_block_comment(x);
        else
            return;
    }
}

static int refuse_at(lx *x, size_t pos, const char *fmt, const char *what)
{
    char why[300];
    snprintf(why, sizeof why, fmt, what);
    /* Where the compiler would say it is: after the last #line before it. */
    long line = phys_line(x, pos);
    const char *file = x->name;
    for (int i = x->nmarks - 1; i >= 0; i--)
        if (x->marks[i].pos <= pos) {
            line = x->marks[i].line + (line - x->marks[i].phys);
            if (x->marks[i].file[0])
                file = x->marks[i].file;
            break;
        }
    return ks_fail(x->st, KS_ECOMPILE, 0, "%s:%ld: %s", file, line, why);
}

/* #line N ["file"]: noted for messages (a malformed one is the compiler's
 * to refuse). pos is after the directive name. */
static void note_line(lx *x)
{
    skip_hspace(x);
    long n = 0;
    int digits = 0;
    while (x->pos < x->n && isdigit((unsigned char)x->s[x->pos]) && n < 100000000) {
        n = n * 10 + (x->s[x->pos++] - '0');
        digits++;
    }
    if (!digits || x->nmarks == MAX_LINE_MARKS)
        return;
    line_mark *m = &x->marks[x->nmarks];
    m->file[0] = '\0';
    skip_hspace(x);
    if (at(x, 0) == '"') {
        size_t k = 0;
        x->pos++;
        while (x->pos < x->n && x->s[x->pos] != '"' && !is_newline(x, 0)) {
            char c = x->s[x->pos++];
            if (k + 1 < sizeof m->file)
                m->file[k++] = (unsigned char)c < 0x20 ? '?' : c;
        }
        m->file[k] = '\0';
    }
    /* It numbers the line after it. */
    size_t p = x->pos;
    while (p < x->n && x->s[p] != '\n' && x->s[p] != '\r')
        p++;
    if (p < x->n)
        p++;
    m->pos = p;
    m->phys = phys_line(x, p);
    m->line = n;
    x->nmarks++;
}


/* Whether name may be included: relative, no "..", no backslash or control
 * characters, and a regular file under one of the roots once resolved. */
static int header_allowed(const lx *x, const char *name, size_t len)
{
    if (len == 0 || len >= 1024 || name[0] == '/')
        return 0;
    if (std_header_known(name, len))
        return 1;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7f || c == '\\')
            return 0;
    }
    /* No ".." component. */
    for (size_t i = 0; i < len; i++) {
        if (name[i] == '.' && i + 1 < len && name[i + 1] == '.' && (i == 0 || name[i - 1] == '/') &&
            (i + 2 == len || name[i + 2] == '/'))
            return 0;
    }
    for (int r = 0; r < x->nroots; r++) {
        char path[4096 + 1100], real[PATH_MAX];
        snprintf(path, sizeof path, "%s/%.*s", x->roots[r], (int)len, name);
        if (!realpath(path, real))
            continue;
        size_t rl = strlen(x->roots[r]);
        if (strncmp(real, x->roots[r], rl) != 0 || real[rl] != '/')
            continue;
        struct stat sb;
        if (stat(real, &sb) == 0 && S_ISREG(sb.st_mode))
            return 1;
    }
    return 0;
}

/* Reads a header name at pos ("..." or <...>) for `what` (a directive or
 * __has_include) and checks it. KS_OK or a refusal. */
static int check_header(lx *x, size_t where, const char *what)
{
    int open = at(x, 0);
    char close = open == '<' ? '>' : '"';
    if (open != '<' && open != '"')
        return refuse_at(x, where, "%s with a computed or missing header name is not allowed: "
                                   "candidates may include only the CUDA toolkit's headers, named in \"\" or <>",
                         what);
    size_t start = x->pos + 1, end = start;
    while (end < x->n && x->s[end] != close && x->s[end] != '\n' && x->s[end] != '\r')
        end++;
    if (end >= x->n || x->s[end] != close)
        return refuse_at(x, where, "%s with an unterminated header name is not allowed", what);
    x->pos = end + 1;
    if (header_allowed(x, x->s + start, end - start))
        return KS_OK;
    char shown[200];
    size_t len = end - start;
    int call = what[0] != '#'; /* __has_include(...) */
    snprintf(shown, sizeof shown, "%s%s%c%.*s%s%c%s", what, call ? "(" : " ", open, (int)(len > 120 ? 120 : len),
             x->s + start, len > 120 ? "..." : "", close, call ? ")" : "");
    for (char *p = shown; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = '?';
    return refuse_at(x, where,
                     "%s is not allowed: candidates may include only the CUDA toolkit's headers and the standard "
                     "ones klab provides (<cstdint>, <cfloat>, <climits>, <cstddef>, <cstdio>, <cassert>, <cmath> "
                     "and their .h forms)",
                     shown);
}

/* Reads an identifier at pos into buf (truncated); 1 when it holds a
 * backslash (a universal character name). */
static int read_ident(lx *x, char *buf, size_t n)
{
    size_t k = 0;
    int ucn = 0;
    while (x->pos < x->n && ident_char((unsigned char)x->s[x->pos])) {
        char c = x->s[x->pos];
        if (c == '\\') {
            if (at(x, 1) != 'u' && at(x, 1) != 'U')
                break;
            ucn = 1;
        }
        if (k + 1 < n)
            buf[k++] = c;
        x->pos++;
    }
    buf[k] = '\0';
    return ucn;
}

/* After "__has_include": ( header-name ). */
static int check_has_include(lx *x, size_t where, const char *ident)
{
    skip_hspace(x);
    if (at(x, 0) != '(')
        return refuse_at(x, where, "%s without a parenthesised header name is not allowed", ident);
    x->pos++;
    skip_hspace(x);
    return check_header(x, where, ident);
}

/* The directive whose '#' (or "%:") was at `where`; pos is after it. */
static int directive(lx *x, size_t where)
{
    skip_hspace(x);
    char name[64];
    int ucn = read_ident(x, name, sizeof name);
    if (ucn)
        return refuse_at(x, where, "a directive spelled with universal character names (%s) is not allowed",
                         name);
    if (!strcmp(name, "include") || !strcmp(name, "include_next") || !strcmp(name, "import")) {
        char what[80];
        snprintf(what, sizeof what, "#%s", name);
        skip_hspace(x);
        return check_header(x, where, what);
    }
    if (!strcmp(name, "embed"))
        return refuse_at(x, where, "%s is not allowed: candidates may not read files", "#embed");
    if (!strcmp(name, "line"))
        note_line(x);
    return KS_OK;
}

/* A raw string literal at pos (its prefix already read; pos at the '"'). */
static int skip_raw_string(lx *x, size_t where)
{
    size_t p = x->pos + 1, d0 = p;
    while (p < x->n && p - d0 <= 16 && x->s[p] != '(') {
        char c = x->s[p];
        if (c == ' ' || c == ')' || c == '\\' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f')
            break;
        p++;
    }
    if (p >= x->n || x->s[p] != '(')
        return refuse_at(x, where, "%s", "a raw string literal with a malformed delimiter is not allowed");
    size_t dlen = p - d0;
    for (size_t q = p + 1; q < x->n; q++) {
        if (x->s[q] == ')' && q + 1 + dlen < x->n && memcmp(x->s + q + 1, x->s + d0, dlen) == 0 &&
            x->s[q + 1 + dlen] == '"') {
            x->pos = q + dlen + 2;
            return KS_OK;
        }
    }
    return refuse_at(x, where, "%s", "an unterminated raw string literal is not allowed");
}

static int is_raw_prefix(const char *id)
{
    return !strcmp(id, "R") || !strcmp(id, "LR") || !strcmp(id, "uR") || !strcmp(id, "UR") ||
           !strcmp(id, "u8R");
}

/* A preprocessing number: digits, letters, '_', '.', exponent signs and
 * digit separators (a quote followed by a digit or a letter). */
static void skip_ppnumber(lx *x)
{
    while (x->pos < x->n) {
        int c = at(x, 0);
        if (isalnum(c) || c == '_' || c == '.') {
            if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') && (at(x, 1) == '+' || at(x, 1) == '-'))
                x->pos++;
            x->pos++;
        } else if (c == '\'' && (isalnum(at(x, 1)) || at(x, 1) == '_')) {
            x->pos += 2;
        } else {
            return;
        }
    }
}

static int scan(lx *x)
{
    int bol = 1; /* only space and comments since the line began */
    while (x->pos < x->n) {
        int c = at(x, 0);
        if (c == '\n' || c == '\r') {
            x->pos++;
            bol = 1;
        } else if (c == ' ' || c == '\t' || c == '\f' || c == '\v') {
            x->pos++;
        } else if (c == '/' && at(x, 1) == '/') {
            skip_line_comment(x);
        } else if (c == '/' && at(x, 1) == '*') {
            /* A comment that spans lines may leave what follows it at the
             * start of a line for some reader: examine it as such. */
            if (skip_block_comment(x))
                bol = 1;
        } else if (bol && (c == '#' || (c == '%' && at(x, 1) == ':'))) {
            size_t where = x->pos;
            x->pos += c == '#' ? 1 : 2;
            int rc = directive(x, where);
            if (rc)
                return rc;
            bol = 0;
        } else if (c == '"' || c == '\'') {
            skip_quoted(x, (char)c);
            bol = 0;
        } else if (isdigit(c) || (c == '.' && isdigit(at(x, 1)))) {
            skip_ppnumber(x);
            bol = 0;
        } else if (ident_start(c)) {
            size_t where = x->pos;
            char id[64];
            read_ident(x, id, sizeof id);
            if (x->pos == where)
                x->pos++; /* a lone backslash */
            if (is_raw_prefix(id) && at(x, 0) == '"') {
                int rc = skip_raw_string(x, where);
                if (rc)
                    return rc;
            } else if (!strcmp(id, "__has_include") || !strcmp(id, "__has_include_next")) {
                int rc = check_has_include(x, where, id);
                if (rc)
                    return rc;
            }
            bol = 0;
        } else {
            x->pos++;
            bol = 0;
        }
    }
    return KS_OK;
}

int includes_check(const char *src, size_t len, const char *name, char roots[][4096], int nroots,
                   ks_status *st)
{
    lx x;
    memset(&x, 0, sizeof x);
    x.name = name && *name ? name : "<source>";
    x.roots = roots;
    x.nroots = nroots;
    x.st = st;
    for (size_t i = 0; i + 2 < len; i++)
        if (src[i] == '?' && src[i + 1] == '?' && (src[i + 2] == '=' || src[i + 2] == '/')) {
            long line = 1;
            for (size_t k = 0; k < i; k++)
                line += src[k] == '\n';
            return ks_fail(st, KS_ECOMPILE, 0, "%s:%ld: the trigraph ??%c is not allowed", x.name, line,
                           src[i + 2]);
        }
    x.s = malloc(len + 1);
    x.spl = malloc((len / 2 + 1) * sizeof *x.spl);
    if (!x.s || !x.spl) {
        free(x.s);
        free(x.spl);
        return ks_fail(st, KS_ENOMEM, 0, "out of memory checking the includes of %s", x.name);
    }
    /* Splice backslash-newline (LF or CRLF); a backslash before a lone CR
     * is left alone, so that the lone CR still ends a line here. */
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\\' && i + 1 < len && src[i + 1] == '\n') {
            x.spl[x.nspl++] = x.n;
            i += 1;
            continue;
        }
        if (src[i] == '\\' && i + 2 < len && src[i + 1] == '\r' && src[i + 2] == '\n') {
            x.spl[x.nspl++] = x.n;
            i += 2;
            continue;
        }
        x.s[x.n++] = src[i];
    }
    x.s[x.n] = '\0';
    int rc = scan(&x);
    free(x.s);
    free(x.spl);
    return rc;
}
