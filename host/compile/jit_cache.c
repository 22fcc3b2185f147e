/*
 * jit_cache.c: the content hash of a request and the disk cache of
 * results under it (entries checked whole before use, written atomically).
 */
#include "compile/jit_cache.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "compile/jit_common.h"
#include "compile/jit_result.h"
#include "compile/std_headers.h"

#define JIT_CACHE_MAGIC "KLABJIT 2\n"

/* ---- content hash ------------------------------------------------------- */

static void hash_field(sha256_ctx *c, const void *p, size_t n)
{
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)((uint64_t)n >> (8 * i));
    sha256_update(c, len, 8);
    sha256_update(c, p, n);
}

static void hash_str(sha256_ctx *c, const char *s) { hash_field(c, s, strlen(s)); }

static void content_hash(const jit_request *req, jit_lang lang, const char *compiler,
                         char out[SHA256_HEX_LEN + 1])
{
    sha256_ctx c;
    unsigned char d[SHA256_DIGEST_LEN];
    sha256_init(&c);
    /* 2: CUDA programs named under /proc/klab-candidate with a #line, and
     * klab's standard headers, whose texts are part of what compiles. */
    hash_str(&c, "klab-jit 2");
    hash_str(&c, jit_lang_name(lang));
    if (lang == JIT_LANG_CUDA) {
        const char *const *names, *const *texts;
        int n;
        std_headers(&names, &texts, &n);
        for (int i = 0; i < n; i++) {
            hash_str(&c, names[i]);
            hash_str(&c, texts[i]);
        }
    }
    hash_str(&c, req->arch);
    hash_str(&c, compiler);
    hash_str(&c, req->lineinfo ? "lineinfo" : "no-lineinfo");
    for (int i = 0; i < req->noptions; i++)
        hash_str(&c, req->options[i]);
    if (req->include_dir) { /* the folder and the version it holds */
        size_t vn = 0;
        char vpath[4200];
        snprintf(vpath, sizeof vpath, "%.4096s/cutlass/version.h", req->include_dir);
        unsigned char *v = jit_read_file(vpath, (size_t)1 << 20, &vn);
        hash_str(&c, req->include_dir);
        hash_field(&c, v ? (const char *)v : "", v ? vn : 0);
        free(v);
    }
    hash_str(&c, "source");
    hash_field(&c, req->source, req->source_len);
    sha256_final(&c, d);
    sha256_tohex(d, out);
}

/* ---- disk cache --------------------------------------------------------- */

int jit_cache_dir(char *buf, size_t n, ks_status *st)
{
    const char *d = getenv("KLAB_CACHE_DIR");
    if (d && *d) {
        snprintf(buf, n, "%s", d);
        return KS_OK;
    }
    d = getenv("XDG_CACHE_HOME");
    if (d && *d) {
        snprintf(buf, n, "%s/klab/jit", d);
        return KS_OK;
    }
    d = getenv("HOME");
    if (d && *d) {
        snprintf(buf, n, "%s/.cache/klab/jit", d);
        return KS_OK;
    }
    if (n)
        buf[0] = '\0';
    return ks_fail(st, KS_ENOTFOUND, 0, "no cache directory: set KLAB_CACHE_DIR, XDG_CACHE_HOME or HOME");
}

static int entry_path(const char *dir, const char *hash, char *buf, size_t n)
{
    return snprintf(buf, n, "%s/%s.kjit", dir, hash) < (int)n ? 0 : -1;
}

/* Entry layout: a text header, the blobs, then the SHA-256 (hex + '\n') of
 * everything before it, so that a truncated or damaged file is detected:
 *   KLABJIT 1\n lang L\n arch A\n compiler C\n compile_ms M\n
 *   cubin N <sha>\n ptx N\n log N\n \n <cubin><ptx><log> <sha256>\n */
static int load(const char *path, const jit_request *req, jit_lang lang,
                      const char *compiler, jit_result **out)
{
    size_t n = 0;
    unsigned char *b = jit_read_file(path, JIT_MAX_ENTRY, &n);
    if (!b)
        return -1;
    jit_result *r = NULL;
    int ok = 0;
    size_t ml = strlen(JIT_CACHE_MAGIC);
    if (n < ml + SHA256_HEX_LEN + 1 || memcmp(b, JIT_CACHE_MAGIC, ml) != 0)
        goto done;
    char want[SHA256_HEX_LEN + 1];
    sha256_hex(b, n - SHA256_HEX_LEN - 1, want);
    if (memcmp(b + n - SHA256_HEX_LEN - 1, want, SHA256_HEX_LEN) != 0 || b[n - 1] != '\n')
        goto done;
    char *hdr_end = strstr((char *)b, "\n\n");
    if (!hdr_end)
        goto done;
    *hdr_end = '\0';
    char l[16] = "", a[32] = "", comp[96] = "", how[96] = "", chash[SHA256_HEX_LEN + 1] = "";
    double ms = 0;
    size_t ncubin = 0, nptx = 0, nlog = 0;
    if (sscanf((char *)b + ml,
               "lang %15s\narch %31s\ncompiler %95[^\n]\nconfinement %95[^\n]\ncompile_ms %lf\ncubin %zu %64s\n"
               "ptx %zu\nlog %zu",
               l, a, comp, how, &ms, &ncubin, chash, &nptx, &nlog) != 9)
        goto done;
    if (strcmp(l, jit_lang_name(lang)) != 0 || strcmp(a, req->arch) != 0 || strcmp(comp, compiler) != 0)
        goto done;
    size_t body = (size_t)(hdr_end + 2 - (char *)b);
    size_t avail = n - SHA256_HEX_LEN - 1 - body;
    if (ncubin > avail || nptx > avail - ncubin || nlog != avail - ncubin - nptx || ncubin == 0)
        goto done;
    r = jit_result_new(req, lang);
    if (!r)
        goto done;
    const unsigned char *p = b + body;
    r->cubin = malloc(ncubin);
    r->ptx = nptx ? jit_dupn((const char *)p + ncubin, nptx) : NULL;
    char *log = jit_dupn((const char *)p + ncubin + nptx, nlog);
    if (!r->cubin || (nptx && !r->ptx) || !log) {
        free(log);
        goto done;
    }
    memcpy(r->cubin, p, ncubin);
    r->cubin_size = ncubin;
    r->ptx_size = nptx;
    jit_set_log(r, log, nlog);
    r->compile_ms = ms;
    snprintf(r->compiler, sizeof r->compiler, "%s", compiler);
    snprintf(r->confinement, sizeof r->confinement, "%s", how);
    ks_status st;
    ks_clear(&st);
    if (jit_finish_result(r, &st) != KS_OK || strcmp(r->cubin_hash, chash) != 0)
        goto done;
    r->cached = 1;
    ok = 1;
done:
    free(b);
    if (!ok) {
        jit_result_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

void jit_cache_lookup(const jit_request *req, jit_lang lang, const char *compiler,
                      char hash[SHA256_HEX_LEN + 1], char *dir, size_t ndir, char *note, size_t nnote,
                      jit_result **hit)
{
    *hit = NULL;
    dir[0] = note[0] = '\0';
    content_hash(req, lang, compiler, hash);
    if (!req->use_cache) {
        snprintf(note, nnote, "cache bypassed");
        return;
    }
    ks_status cst;
    if (req->cache_dir && *req->cache_dir)
        snprintf(dir, ndir, "%s", req->cache_dir);
    else if (jit_cache_dir(dir, ndir, &cst) != KS_OK)
        snprintf(note, nnote, "%.190s", cst.msg);
    char path[1100];
    if (dir[0] && entry_path(dir, hash, path, sizeof path) == 0 && load(path, req, lang, compiler, hit) == 0) {
        snprintf((*hit)->hash, sizeof (*hit)->hash, "%s", hash);
        jit_bound_text(&(*hit)->log, &(*hit)->log_size, JIT_LOG_MAX);
    }
}

void jit_cache_store(const char *dir, jit_result *r)
{
    char path[1100], tmp[1100];
    ks_status mst;
    if (fs_mkdirs(dir, &mst) != KS_OK) {
        snprintf(r->cache_note, sizeof r->cache_note, "%.190s", mst.msg);
        return;
    }
    if (entry_path(dir, r->hash, path, sizeof path) != 0 ||
        snprintf(tmp, sizeof tmp, "%s/.%.16s.XXXXXX", dir, r->hash) >= (int)sizeof tmp) {
        snprintf(r->cache_note, sizeof r->cache_note, "cache path too long");
        return;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(r->cache_note, sizeof r->cache_note, "cannot write cache entry: %s", strerror(errno));
        return;
    }
    char hdr[512];
    int hl = snprintf(hdr, sizeof hdr,
                      JIT_CACHE_MAGIC "lang %s\narch %s\ncompiler %s\nconfinement %s\ncompile_ms %.3f\n"
                      "cubin %zu %s\nptx %zu\nlog %zu\n\n",
                      jit_lang_name(r->lang), r->arch, r->compiler, r->confinement[0] ? r->confinement : "-",
                      r->compile_ms, r->cubin_size,
                      r->cubin_hash, r->ptx ? r->ptx_size : 0, r->log_size);
    sha256_ctx c;
    unsigned char d[SHA256_DIGEST_LEN];
    char hex[SHA256_HEX_LEN + 2];
    sha256_init(&c);
    sha256_update(&c, hdr, (size_t)hl);
    sha256_update(&c, r->cubin, r->cubin_size);
    if (r->ptx)
        sha256_update(&c, r->ptx, r->ptx_size);
    sha256_update(&c, r->log, r->log_size);
    sha256_final(&c, d);
    sha256_tohex(d, hex);
    hex[SHA256_HEX_LEN] = '\n';
    int bad = jit_write_all(fd, hdr, (size_t)hl) || jit_write_all(fd, r->cubin, r->cubin_size) ||
              (r->ptx && jit_write_all(fd, r->ptx, r->ptx_size)) || jit_write_all(fd, r->log, r->log_size) ||
              jit_write_all(fd, hex, SHA256_HEX_LEN + 1);
    if (close(fd) != 0)
        bad = 1;
    /* rename() is atomic: a reader sees the old entry, no entry, or the
     * complete new one, even when two processes store the same hash. */
    if (bad || rename(tmp, path) != 0) {
        snprintf(r->cache_note, sizeof r->cache_note, "cannot write cache entry: %s", strerror(errno));
        unlink(tmp);
    }
}
