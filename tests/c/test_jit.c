/*
 * test_jit.c: SHA-256, the PTX census, the cubin reader, dynlib, and
 * jit_compile through ptxas and NVRTC (no GPU needed), with the disk
 * cache, rejections and concurrent compiles.
 *
 * The sample kernels are read from tasks/samples (found from the current
 * directory or from argv[0]). Tests needing ptxas or NVRTC skip when the
 * toolkit is missing.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "compile/cubin.h"
#include "driver/devkern.h"
#include "driver/dynlib.h"
#include "compile/jit.h"
#include "compile/ptx_census.h"
#include "base/sha256.h"

static char samples[4200];
static char cache_root[1024];

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = '\0';
        *len = (size_t)n;
    }
    return b;
}

static char *sample(const char *name, size_t *len)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", samples, name);
    char *s = slurp(p, len);
    if (!s)
        fprintf(stderr, "cannot read %s\n", p);
    return s;
}

static int find_samples(const char *argv0)
{
    const char *env = getenv("KLAB_ROOT");
    char cand[4][1024];
    int n = 0;
    if (env)
        snprintf(cand[n++], sizeof cand[0], "%s/tasks/samples", env);
    snprintf(cand[n++], sizeof cand[0], "tasks/samples");
    char dir[900];
    snprintf(dir, sizeof dir, "%s", argv0);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        snprintf(cand[n++], sizeof cand[0], "%s/../../tasks/samples", dir);
        snprintf(cand[n++], sizeof cand[0], "%s/../../../tasks/samples", dir);
    }
    for (int i = 0; i < n; i++) {
        char p[4300];
        snprintf(p, sizeof p, "%s/vector_add.ptx", cand[i]);
        if (access(p, R_OK) == 0) {
            snprintf(samples, sizeof samples, "%s", cand[i]);
            return 1;
        }
    }
    return 0;
}

static void rm_rf(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[1400];
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Counts the files of dir ending in suffix (or, with suffix NULL, all). */
static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t a = strlen(e->d_name), b = suffix ? strlen(suffix) : 0;
        if (!suffix || (a >= b && !strcmp(e->d_name + a - b, suffix)))
            n++;
    }
    closedir(d);
    return n;
}

static const jit_kernel *kernel(const jit_result *r, const char *name)
{
    for (int i = 0; r && i < r->nkernels; i++)
        if (!strcmp(r->kernels[i].name, name))
            return &r->kernels[i];
    return NULL;
}

/* Compiles text with lang/arch into a fresh subdirectory of the test cache. */
static int compile(const char *src, size_t len, jit_lang lang, const char *arch, const char *name,
                   int cache, jit_result **out, ks_status *st)
{
    jit_request req;
    jit_request_init(&req);
    req.source = src;
    req.source_len = len;
    req.lang = lang;
    req.arch = arch;
    req.name = name;
    req.use_cache = cache;
    return jit_compile(&req, out, st);
}

/* ---- SHA-256 ------------------------------------------------------------ */

static void test_sha256(void)
{
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    sha256_hex("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(m448, strlen(m448), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    sha256_hex(m896, strlen(m896), hex);
    CHECK(!strcmp(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"));

    /* One million 'a', fed in uneven pieces to exercise the block buffer. */
    sha256_ctx c;
    unsigned char d[SHA256_DIGEST_LEN];
    char a[1000];
    memset(a, 'a', sizeof a);
    sha256_init(&c);
    size_t left = 1000000, step = 1;
    while (left) {
        size_t k = step < left ? step : left;
        if (k > sizeof a)
            k = sizeof a;
        sha256_update(&c, a, k);
        left -= k;
        step = step * 7 % 997 + 1;
    }
    sha256_final(&c, d);
    sha256_tohex(d, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));

    /* Lengths around the padding boundary (55, 56, 64 bytes) agree between
     * one-shot and byte-at-a-time hashing. */
    for (size_t n = 54; n <= 65; n++) {
        char one[SHA256_HEX_LEN + 1], bytes[SHA256_HEX_LEN + 1];
        sha256_hex(a, n, one);
        sha256_init(&c);
        for (size_t i = 0; i < n; i++)
            sha256_update(&c, a + i, 1);
        sha256_final(&c, d);
        sha256_tohex(d, bytes);
        CHECKF(!strcmp(one, bytes), "length %zu", n);
    }
}

/* ---- census ------------------------------------------------------------- */

static long fam(const ptx_census *c, const char *name)
{
    for (int f = 0; f < PTX_NFAMILIES; f++)
        if (!strcmp(ptx_family_name(f), name))
            return c->count[f];
    return -999;
}

static void test_census(void)
{
    const char *ptx =
        "// wgmma.mma_async.sync in a comment does not count;\n"
        "/* nor tcgen05.alloc.cta_group::1 [x], 32; in a block comment */\n"
        ".version 8.7\n.target sm_100a\n.address_size 64\n"
        ".global .align 4 .b8 msg[6] = {104, 101, 108, 108, 111, 0};\n"
        ".visible .entry k(.param .u64 p)\n{\n"
        "  .reg .b32 %r<9>; .reg .pred %p<2>; .reg .f32 %f<9>; .reg .b64 %rd<4>;\n"
        "L0: wgmma.fence.sync.aligned;\n"
        "  @%p1 wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, %p1, 1, 1, 0, 0;\n"
        "  wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned 0;\n"
        "  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];\n"
        "  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%r1], [%rd1, {%r2, %r3}], [%r4], %rd3;\n"
        "  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 64, [%r4];\n"
        "  cp.async.bulk.commit_group;\n"
        "  cp.async.ca.shared.global [%r1], [%rd1], 16;\n  cp.async.commit_group;\n"
        "  mbarrier.init.shared::cta.b64 [%r4], 1;\n"
        "  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r4], 0;\n"
        "  setmaxnreg.inc.sync.aligned.u32 232;\n"
        "  stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r1], {%r2, %r3, %r4, %r5};\n"
        "  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r2, %r3, %r4, %r5}, [%r1];\n"
        "  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%f5,%f6,%f7,%f8};\n"
        "  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;\n"
        "  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n"
        "  tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r3, %p1;\n"
        "  tcgen05.ld.sync.aligned.32x32b.x1.b32 {r}, [%r1];\n"
        "  tcgen05.st.sync.aligned.32x32b.x1.b32 [%r1], {%r2};\n"
        "  tcgen05.cp.cta_group::1.128x256b [%r1], %rd1;\n"
        "  tcgen05.wait::ld.sync.aligned;\n"
        "  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 32;\n"
        "  elect.sync %r1|%p1, 0xffffffff;\n"
        "  barrier.cluster.arrive; barrier.cluster.wait;\n"
        "  fence.proxy.async.shared::cta;\n"
        "  { .reg .b32 t; mov.b32 t, \"not ; an instruction\"; }\n"
        "  ret;\n}\n";
    ptx_census c;
    ptx_census_count(ptx, strlen(ptx), &c);
    CHECK(fam(&c, "wgmma") == 4);
    CHECK(fam(&c, "cp.async.bulk.tensor") == 2); /* one with an L2 cache hint */
    CHECK(fam(&c, "cp.async.bulk") == 2);
    CHECK(fam(&c, "cp.async") == 2);
    CHECK(fam(&c, "mbarrier") == 2);
    CHECK(fam(&c, "setmaxnreg") == 1);
    CHECK(fam(&c, "stmatrix") == 1);
    CHECK(fam(&c, "ldmatrix") == 1);
    CHECK(fam(&c, "mma.sync") == 1);
    CHECKF(fam(&c, "tcgen05") == 8, "tcgen05 %ld", fam(&c, "tcgen05"));
    CHECK(fam(&c, "tcgen05.mma") == 1);
    CHECK(fam(&c, "tcgen05.alloc") == 3);
    CHECK(fam(&c, "tcgen05.ld") == 1);
    CHECK(fam(&c, "tcgen05.st") == 1);
    CHECK(fam(&c, "tcgen05.cp") == 1);
    CHECK(fam(&c, "elect.sync") == 1);
    CHECK(fam(&c, "barrier.cluster") == 2);
    CHECK(fam(&c, "fence.proxy.async") == 1);
    /* 4 wgmma + 4 bulk + 2 cp.async + 2 mbarrier + setmaxnreg + stmatrix +
     * ldmatrix + mma + 8 tcgen05 + elect + 2 barrier + fence + mov + ret = 30 */
    CHECKF(c.instructions == 30, "instructions %ld", c.instructions);
    CHECK(ptx_family_name(PTX_NFAMILIES) == NULL);

    /* -lineinfo PTX: .loc and .file end at the newline, so the instruction
     * after each still counts. */
    const char *lined =
        "\t.file\t1 \"k.cu\"\n"
        "\t.loc\t1 10 3\n"
        "\tsetmaxnreg.inc.sync.aligned.u32 232;\n"
        "\t.loc\t1 11 3\n"
        "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];\n"
        "\t.loc\t1 12 3\n"
        "\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1,%f2,%f3,%f4}, {%r5,%r6,%r7,%r8}, {%r9,%r10}, {%f1,%f2,%f3,%f4};\n";
    ptx_census_count(lined, strlen(lined), &c);
    CHECKF(c.instructions == 3, "lineinfo instructions %ld", c.instructions);
    CHECK(c.count[PTX_SETMAXNREG] == 1);
    CHECK(c.count[PTX_CP_ASYNC_BULK_TENSOR] == 1);
    CHECK(c.count[PTX_MMA_SYNC] == 1);

    /* A truncated statement does not count; an empty text has none. */
    ptx_census_count("wgmma.fence.sync.aligned", 24, &c);
    CHECK(c.instructions == 0);
    ptx_census_count("", 0, &c);
    CHECK(c.instructions == 0);

    /* Comments and strings are blanked with lengths and newlines kept. */
    const char *t = "a // b\nc /* d\ne */ f \"g;h\" i";
    char *s = ptx_strip(t, strlen(t));
    CHECK(s && strlen(s) == strlen(t));
    CHECK(s && !strcmp(s, "a     \nc     \n     f       i"));
    free(s);
}

/* ---- dynlib ------------------------------------------------------------- */

static void test_dynlib(void)
{
    ks_status st;
    dynlib lib;
    char buf[128];
    int rc = dynlib_open(&dynlib_nvrtc, &lib, &st);
    if (rc != KS_OK) {
        SKIP("NVRTC not installed");
        return;
    }
    CHECK(lib.path[0] != '\0');
    CHECK(strstr(lib.path, "nvrtc") != NULL);
    void *fn = NULL;
    CHECK(dynlib_sym(&lib, "nvrtcVersion", &fn, &st) == KS_OK && fn);
    CHECK(dynlib_sym(&lib, "nvrtcNoSuchFunction", &fn, &st) == KS_ENOTFOUND && !fn);
    CHECK(strstr(st.msg, "nvrtcNoSuchFunction") != NULL);
    dynlib_close(&lib);
    dynlib_close(&lib);         /* idempotent */
    CHECK(lib.handle == NULL);

    /* An explicit path wins and is the only thing tried. */
    setenv("KLAB_CUPTI", "/nonexistent/libcupti.so.99", 1);
    rc = dynlib_open(&dynlib_cupti, &lib, &st);
    CHECK(rc == KS_ENOLIB);
    CHECK(strstr(st.msg, "/nonexistent/libcupti.so.99") != NULL);
    CHECK(strstr(st.msg, "KLAB_CUPTI") != NULL);
    unsetenv("KLAB_CUPTI");

    /* A descriptor with no loadable file lists every attempt. */
    static const char *const none[] = {"libklab_missing.so.1", NULL};
    static const dynlib_desc missing = {"missing", "KLAB_MISSING_TEST", none, NULL};
    rc = dynlib_open(&missing, &lib, &st);
    CHECK(rc == KS_ENOLIB);
    CHECK(strstr(st.msg, "lib64/libklab_missing.so.1") != NULL);  /* CUDA_HOME attempt */
    CHECK(strstr(st.msg, "; libklab_missing.so.1") != NULL);      /* soname attempt */
    CHECK(dynlib_version(&missing, buf, sizeof buf, &st) == KS_ENOLIB && buf[0] == '\0');

    /* Versions: NVRTC is "13.0"-like; a missing library is not fatal. */
    CHECK(dynlib_version(&dynlib_nvrtc, buf, sizeof buf, &st) == KS_OK);
    CHECK(strchr(buf, '.') != NULL);
    const dynlib *shared = dynlib_get(&dynlib_nvrtc, &st);
    CHECK(shared && shared == dynlib_get(&dynlib_nvrtc, &st));
    setenv("KLAB_CUDNN", "/nonexistent/libcudnn.so", 1);
    if (!dynlib_get(&dynlib_cudnn, &st)) {
        CHECK(dynlib_version(&dynlib_cudnn, buf, sizeof buf, &st) == KS_ENOLIB);
        CHECK(buf[0] == '\0');
    }
    unsetenv("KLAB_CUDNN");
    CHECK(strlen(dynlib_cuda_home()) > 0);
}

/* ---- ptxas path --------------------------------------------------------- */

static int have_ptxas;
static int have_nvrtc;

static void test_ptxas(void)
{
    ks_status st;
    size_t len;
    jit_result *r = NULL;
    char *src = sample("vector_add.ptx", &len);
    if (!src)
        return;

    int rc = compile(src, len, JIT_LANG_AUTO, "sm_90a", "vector_add.ptx", 0, &r, &st);
    CHECKF(rc == KS_OK, "%s", st.msg);
    if (rc == KS_OK) {
        CHECK(r->lang == JIT_LANG_PTX);
        CHECK(!strcmp(r->arch, "sm_90a"));
        CHECK(r->cubin && r->cubin_size > 64);
        CHECK(r->nkernels == 1);
        const jit_kernel *k = kernel(r, "vector_add");
        CHECK(k != NULL);
        if (k) {
            CHECK(k->registers > 0 && k->registers < 64);
            CHECK(k->spill_stores == 0 && k->spill_loads == 0);
            CHECK(k->shared_static == 0 && k->local_bytes == 0);
            CHECK(k->param_bytes == 28);    /* 3 pointers + 1 u32 */
            /* Each parameter's place, in order, from EIATTR_KPARAM_INFO. */
            CHECKF(k->nparams == 4 && k->params, "nparams %d", k->nparams);
            if (k->params && k->nparams == 4) {
                static const long off[] = {0, 8, 16, 24}, size[] = {8, 8, 8, 4};
                for (int i = 0; i < 4; i++)
                    CHECKF(k->params[i].offset == off[i] && k->params[i].size == size[i],
                           "parameter %d at %ld, %ld bytes", i, k->params[i].offset, k->params[i].size);
            }
            CHECK(k->sass_instructions > 4);
            /* The log says the same number of registers as the cubin. */
            char want[64];
            snprintf(want, sizeof want, "Used %d registers", k->registers);
            CHECKF(strstr(r->log, want) != NULL, "log: %s", r->log);
        }
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(r->cubin, r->cubin_size, hex);
        CHECK(!strcmp(hex, r->cubin_hash));
        CHECK(strlen(r->hash) == 64 && strcmp(r->hash, r->cubin_hash) != 0);
        CHECK(!strncmp(r->compiler, "ptxas ", 6));
        CHECK(r->ptx && !strcmp(r->ptx, src));
        CHECK(r->census.instructions >= 20 && r->census.count[PTX_WGMMA] == 0);
        CHECK(r->compile_ms > 0);
        CHECK(!r->cached);
        CHECK(strstr(r->cache_note, "bypass") != NULL);
        cubin_info ci;
        CHECK(cubin_parse(r->cubin, r->cubin_size, &ci, &st) == KS_OK);
        CHECK(ci.sm == 90 && ci.elf_type == 2);
        cubin_free(&ci);
        cubin_free(&ci);
    }
    jit_result_free(r);

    /* Same source for sm_100a: a different content hash. */
    jit_result *r2 = NULL;
    rc = compile(src, len, JIT_LANG_PTX, "sm_100a", NULL, 0, &r2, &st);
    CHECKF(rc == KS_OK, "%s", st.msg);
    if (rc == KS_OK) {
        cubin_info ci;
        CHECK(cubin_parse(r2->cubin, r2->cubin_size, &ci, &st) == KS_OK && ci.sm == 100);
        cubin_free(&ci);
    }
    jit_result_free(r2);
    free(src);

    /* wgmma for sm_90a. */
    src = sample("wgmma_tile.ptx", &len);
    if (!src)
        return;
    r = NULL;
    rc = compile(src, len, JIT_LANG_AUTO, "sm_90a", "wgmma_tile.ptx", 0, &r, &st);
    CHECKF(rc == KS_OK, "%s", st.msg);
    if (rc == KS_OK) {
        const jit_kernel *k = kernel(r, "wgmma_tile");
        CHECK(k && k->registers > 0);
        CHECK(r->census.count[PTX_WGMMA] == 4);
        CHECK(r->census.count[PTX_FENCE_PROXY_ASYNC] == 1);
        CHECK(r->census.count[PTX_TCGEN05] == 0);
        if (k) {
            /* 2048 + 256 bytes declared; the cubin section adds the 1 KiB
             * the system reserves on sm_90. */
            CHECKF(k->shared_static == 2304, "shared %ld", k->shared_static);
            CHECKF(k->shared_cubin == 2304 || k->shared_cubin == 2304 + 1024, "section %ld",
                   k->shared_cubin);
            CHECK(strstr(r->log, "2304 bytes smem") != NULL);
        }
    }
    jit_result_free(r);

    /* ... and its failure for sm_80, with the assembler's own message. */
    r = NULL;
    rc = compile(src, len, JIT_LANG_AUTO, "sm_80", "wgmma_tile.ptx", 0, &r, &st);
    CHECKF(rc == KS_ECOMPILE, "rc %d %s", rc, st.msg);
    CHECK(r != NULL && r->cubin == NULL);
    if (r) {
        CHECKF(strstr(r->log, "ptxas") != NULL, "log: %s", r->log);
        CHECK(strstr(r->log, "SM version") != NULL || strstr(r->log, "sm_80") != NULL);
    }
    CHECKF(strstr(st.msg, "wgmma_tile.ptx") && strstr(st.msg, "ptxas"), "%s", st.msg);
    jit_result_free(r);
    free(src);

    /* tcgen05 for sm_100a: whole-program, so no guard-rail functions. */
    src = sample("tcgen05_alloc.ptx", &len);
    if (!src)
        return;
    r = NULL;
    rc = compile(src, len, JIT_LANG_AUTO, "sm_100a", "tcgen05_alloc.ptx", 0, &r, &st);
    CHECKF(rc == KS_OK, "%s", st.msg);
    if (rc == KS_OK) {
        const jit_kernel *k = kernel(r, "tcgen05_alloc");
        CHECK(k && k->registers > 0);
        CHECK(k && k->tcgen05 >= 1);                /* EIATTR_TCGEN05_1CTA_USED */
        CHECK(k && k->shared_static >= 4096 + 512);
        CHECK(r->census.count[PTX_TCGEN05_ALLOC] == 3);
        CHECK(r->census.count[PTX_TCGEN05_MMA] == 1);
        CHECK(r->census.count[PTX_TCGEN05_LD] == 1);
        CHECK(r->census.count[PTX_WGMMA] == 0);
        cubin_info ci;
        if (cubin_parse(r->cubin, r->cubin_size, &ci, &st) == KS_OK) {
            /* ptxas 13.0 adds tcgen05 guard-rail traps even whole-program,
             * but inside the kernel's own .text section; a relocatable
             * compile (ptxas -c, nvJitLink) puts them in sections of their
             * own. So every guard-rail symbol shares the kernel's section. */
            unsigned ksec = 0;
            for (int i = 0; i < ci.nsymbols; i++)
                if (!strcmp(ci.symbols[i].name, "tcgen05_alloc"))
                    ksec = ci.symbols[i].shndx;
            int separate = 0;
            for (int i = 0; i < ci.nsymbols; i++)
                if (strstr(ci.symbols[i].name, "guardrail") && ci.symbols[i].shndx != ksec)
                    separate++;
            CHECK(ksec != 0);
            CHECK(separate == 0);
            CHECK(ci.nkernels == 1 && ci.sm == 100);
            cubin_free(&ci);
        } else
            CHECKF(0, "%s", st.msg);
    }
    jit_result_free(r);
    /* tcgen05 does not exist on sm_90a. */
    r = NULL;
    CHECK(compile(src, len, JIT_LANG_PTX, "sm_90a", "tcgen05_alloc.ptx", 0, &r, &st) == KS_ECOMPILE);
    jit_result_free(r);
    free(src);

    /* The other samples assemble too. */
    const char *others[] = {"fault.ptx", "spin.ptx"};
    for (int i = 0; i < 2; i++) {
        src = sample(others[i], &len);
        r = NULL;
        rc = src ? compile(src, len, JIT_LANG_AUTO, "sm_90a", others[i], 0, &r, &st) : -1;
        CHECKF(rc == KS_OK, "%s: %s", others[i], st.msg);
        CHECK(r && r->nkernels == 1);
        jit_result_free(r);
        free(src);
    }

    /* A syntax error is ECOMPILE with a line number in the log. */
    const char *bad = ".version 8.0\n.target sm_80\n.address_size 64\n"
                      ".visible .entry k()\n{\n  frobnicate.u32 %r1;\n  ret;\n}\n";
    r = NULL;
    rc = compile(bad, strlen(bad), JIT_LANG_AUTO, "sm_90a", "bad.ptx", 0, &r, &st);
    CHECK(rc == KS_ECOMPILE);
    CHECK(r && strstr(r->log, "bad.ptx, line 6") != NULL);
    CHECK(strstr(st.msg, "bad.ptx") != NULL);
    jit_result_free(r);

    /* PTX with no kernel entry. */
    const char *noentry = ".version 8.0\n.target sm_80\n.address_size 64\n"
                          ".func f()\n{\n  ret;\n}\n";
    r = NULL;
    rc = compile(noentry, strlen(noentry), JIT_LANG_PTX, "sm_90a", NULL, 0, &r, &st);
    CHECKF(rc == KS_EREJECT && strstr(st.msg, "entry"), "%d %s", rc, st.msg);
    jit_result_free(r);
}

/* ---- rejections --------------------------------------------------------- */

static void expect_reject(const char *src, size_t len, jit_lang lang, const char *arch,
                          const char *want, const char *what)
{
    ks_status st;
    jit_result *r = NULL;
    int rc = compile(src, len, lang, arch, NULL, 0, &r, &st);
    CHECKF(rc == KS_EREJECT, "%s: rc %s (%s)", what, ks_code_name(rc), st.msg);
    CHECKF(strstr(st.msg, want) != NULL, "%s: message '%s' lacks '%s'", what, st.msg, want);
    jit_result_free(r);
}

static void test_rejections(void)
{
    const char *cdp =
        ".version 8.0\n.target sm_80\n.address_size 64\n"
        ".extern .func (.param .b64 func_retval0) cudaGetParameterBufferV2\n"
        "(\n .param .b64 a, .param .align 4 .b8 b[12], .param .align 4 .b8 c[12], .param .b32 d\n);\n"
        ".visible .entry k()\n{\n  ret;\n}\n";
    expect_reject(cdp, strlen(cdp), JIT_LANG_PTX, "sm_90a", "dynamic parallelism", "cdp ptx");

    const char *ext =
        ".version 8.0\n.target sm_80\n.address_size 64\n"
        ".extern .func helper\n(\n .param .b32 x\n);\n"
        ".visible .entry k()\n{\n  .reg .b32 %r<2>;\n  mov.u32 %r1, 1;\n"
        "  { .param .b32 p; st.param.b32 [p], %r1; call.uni helper, (p); }\n  ret;\n}\n";
    expect_reject(ext, strlen(ext), JIT_LANG_PTX, "sm_90a", "unresolved external function helper",
                  "extern func");

    /* vprintf is resolved by ptxas itself: allowed. */
    const char *pf =
        ".version 8.0\n.target sm_80\n.address_size 64\n"
        ".extern .func (.param .b32 func_retval0) vprintf\n(\n .param .b64 a, .param .b64 b\n);\n"
        ".visible .entry k()\n{\n  ret;\n}\n";
    ks_status st;
    jit_result *r = NULL;
    int rc = compile(pf, strlen(pf), JIT_LANG_PTX, "sm_90a", NULL, 0, &r, &st);
    CHECKF(rc == KS_OK, "vprintf: %s", st.msg);
    jit_result_free(r);

    /* Mentions in comments do not count. */
    const char *cmt = ".version 8.0\n.target sm_80\n.address_size 64\n"
                      "// no cudaLaunchDeviceV2 here, nor .extern .func x();\n"
                      ".visible .entry k()\n{\n  ret;\n}\n";
    r = NULL;
    rc = compile(cmt, strlen(cmt), JIT_LANG_PTX, "sm_90a", NULL, 0, &r, &st);
    CHECKF(rc == KS_OK, "comment: %s", st.msg);
    jit_result_free(r);

    expect_reject("", 0, JIT_LANG_AUTO, "sm_90a", "empty", "empty");
    expect_reject(" \n\t\n", 4, JIT_LANG_PTX, "sm_90a", "empty", "blank");
    const char bin[] = {'.', 'v', 'e', 'r', 0, 1, 2, 3, 'x'};
    expect_reject(bin, sizeof bin, JIT_LANG_PTX, "sm_90a", "binary", "binary");
    const char elf[] = "\177ELF\2\1\1";
    expect_reject(elf, sizeof elf - 1, JIT_LANG_AUTO, "sm_90a", "binary", "elf");

    /* Unknown targets, asked of the compiler. */
    size_t len;
    char *src = sample("vector_add.ptx", &len);
    if (src) {
        expect_reject(src, len, JIT_LANG_PTX, "sm_99", "does not know the target sm_99", "sm_99");
        expect_reject(src, len, JIT_LANG_PTX, "sm_90b", "not a GPU target", "sm_90b");
        expect_reject(src, len, JIT_LANG_PTX, "compute_90", "not a GPU target", "compute_90");
        expect_reject(src, len, JIT_LANG_PTX, "sm_9", "not a GPU target", "sm_9");
        free(src);
    }
    CHECK(jit_check_arch("sm_90a", JIT_LANG_PTX, &st) == KS_OK);
    CHECK(jit_check_arch("sm_100a", JIT_LANG_PTX, &st) == KS_OK);
    CHECK(jit_check_arch("sm_120", JIT_LANG_PTX, &st) == KS_OK);
    CHECK(jit_check_arch("sm_80", JIT_LANG_PTX, &st) == KS_OK);
    CHECK(jit_check_arch("sm_91", JIT_LANG_PTX, &st) == KS_EREJECT);
    CHECK(jit_check_arch(NULL, JIT_LANG_PTX, &st) == KS_EINVAL);

    /* Forbidden options. */
    const char *opts[] = {"-c"};
    jit_request req;
    jit_request_init(&req);
    req.source = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n";
    req.source_len = strlen(req.source);
    req.arch = "sm_90a";
    req.options = opts;
    req.noptions = 1;
    req.use_cache = 0;
    r = NULL;
    CHECK(jit_compile(&req, &r, &st) == KS_EINVAL && r == NULL);
    CHECK(strstr(st.msg, "-c") != NULL);
    req.noptions = 0;
    req.arch = NULL;
    CHECK(jit_compile(&req, &r, &st) == KS_EINVAL);
}

/* ---- NVRTC path --------------------------------------------------------- */

static void test_nvrtc(void)
{
    ks_status st;
    size_t len;
    jit_result *r = NULL;
    char *src = sample("vector_add.cu", &len);
    if (!src)
        return;
    int rc = compile(src, len, JIT_LANG_AUTO, "sm_90a", "vector_add.cu", 0, &r, &st);
    CHECKF(rc == KS_OK, "%s", st.msg);
    if (rc == KS_OK) {
        CHECK(r->lang == JIT_LANG_CUDA);
        CHECK(!strncmp(r->compiler, "nvrtc ", 6));
        CHECK(r->ptx && strstr(r->ptx, ".entry vector_add") != NULL);
        CHECK(r->ptx && strstr(r->ptx, ".target sm_90a") != NULL);
        const jit_kernel *k = kernel(r, "vector_add");
        CHECK(k && k->registers > 0);
        CHECK(k && k->spill_stores == 0 && k->spill_loads == 0);
        if (k) {
            char want[64];
            snprintf(want, sizeof want, "Used %d registers", k->registers);
            CHECKF(strstr(r->log, want) != NULL, "log: %s", r->log);
        }
        CHECK(r->census.instructions > 5);
    }
    jit_result_free(r);
    free(src);

    /* bf16/fp16/fp8 headers resolve through -I$CUDA_HOME/include. */
    const char *hdr = "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n#include <cuda_fp8.h>\n"
                      "extern \"C\" __global__ void k(__nv_bfloat16 *a, const __half *b, "
                      "const __nv_fp8_e4m3 *c) {\n"
                      "  a[threadIdx.x] = __float2bfloat16(__half2float(b[threadIdx.x]) + "
                      "float(c[threadIdx.x]));\n}\n";
    r = NULL;
    rc = compile(hdr, strlen(hdr), JIT_LANG_CUDA, "sm_90a", "hdr.cu", 0, &r, &st);
    CHECKF(rc == KS_OK, "%s: %s", st.msg, r ? r->log : "");
    jit_result_free(r);

    /* Compile error: ECOMPILE with the log. */
    const char *bad = "extern \"C\" __global__ void k(float *a) { a[0] = undefined_name; }\n";
    r = NULL;
    rc = compile(bad, strlen(bad), JIT_LANG_CUDA, "sm_90a", "bad.cu", 0, &r, &st);
    CHECK(rc == KS_ECOMPILE);
    CHECK(r && strstr(r->log, "undefined_name") != NULL);
    CHECK(strstr(st.msg, "bad.cu") != NULL);
    jit_result_free(r);

    /* A device-side launch is refused. */
    const char *cdp = "__global__ void child(float *a) { a[0] = 1; }\n"
                      "extern \"C\" __global__ void parent(float *a) { child<<<1, 1>>>(a); }\n";
    r = NULL;
    rc = compile(cdp, strlen(cdp), JIT_LANG_CUDA, "sm_90a", "cdp.cu", 0, &r, &st);
    CHECKF(rc == KS_EREJECT, "rc %s: %s", ks_code_name(rc), st.msg);
    jit_result_free(r);

    /* Unknown target for NVRTC. */
    expect_reject(hdr, strlen(hdr), JIT_LANG_CUDA, "sm_99", "does not know the target", "nvrtc sm_99");
}

/* ---- cache -------------------------------------------------------------- */

static int cached_compile(const char *dir, const char *src, size_t len, jit_result **r, ks_status *st)
{
    jit_request req;
    jit_request_init(&req);
    req.source = src;
    req.source_len = len;
    req.arch = "sm_90a";
    req.name = "vector_add.ptx";
    req.cache_dir = dir;
    return jit_compile(&req, r, st);
}

static void test_cache(void)
{
    ks_status st;
    size_t len;
    char *src = sample("vector_add.ptx", &len);
    if (!src)
        return;
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/one", cache_root);

    jit_result *a = NULL, *b = NULL, *c = NULL;
    CHECK(cached_compile(dir, src, len, &a, &st) == KS_OK);
    CHECK(a && !a->cached && a->cache_note[0] == '\0');
    CHECK(count_files(dir, ".kjit") == 1);
    CHECK(cached_compile(dir, src, len, &b, &st) == KS_OK);
    CHECK(b && b->cached);
    if (a && b) {
        CHECK(!strcmp(a->hash, b->hash) && !strcmp(a->cubin_hash, b->cubin_hash));
        CHECK(a->cubin_size == b->cubin_size && !memcmp(a->cubin, b->cubin, a->cubin_size));
        CHECK(b->nkernels == 1 && b->kernels[0].registers == a->kernels[0].registers);
        CHECK(!strcmp(a->log, b->log) && !strcmp(a->ptx, b->ptx));
        CHECK(b->census.instructions == a->census.instructions);
    }

    /* Corrupt the entry: flip a byte in the cubin; it is ignored and rewritten. */
    char path[1300];
    snprintf(path, sizeof path, "%s/%s.kjit", dir, a ? a->hash : "");
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 200, SEEK_SET);
        int ch = fgetc(f);
        fseek(f, 200, SEEK_SET);
        fputc(ch ^ 0x5a, f);
        fclose(f);
    }
    CHECK(cached_compile(dir, src, len, &c, &st) == KS_OK);
    CHECK(c && !c->cached);
    jit_result_free(c);
    c = NULL;
    CHECK(cached_compile(dir, src, len, &c, &st) == KS_OK && c && c->cached);
    jit_result_free(c);

    /* A truncated entry likewise. */
    CHECK(truncate(path, 100) == 0);
    c = NULL;
    CHECK(cached_compile(dir, src, len, &c, &st) == KS_OK && c && !c->cached);
    jit_result_free(c);

    /* Different options or lineinfo give different hashes. */
    jit_request req;
    jit_request_init(&req);
    req.source = src;
    req.source_len = len;
    req.arch = "sm_90a";
    req.cache_dir = dir;
    req.lineinfo = 0;
    c = NULL;
    CHECK(jit_compile(&req, &c, &st) == KS_OK && c && a && strcmp(c->hash, a->hash) != 0);
    jit_result_free(c);
    CHECK(count_files(dir, ".kjit") == 2);
    CHECK(count_files(dir, NULL) == 2);     /* no temp files left */

    /* KLAB_CACHE_DIR is used when the request names no directory. */
    char env_dir[1100];
    snprintf(env_dir, sizeof env_dir, "%s/env/nested", cache_root);
    setenv("KLAB_CACHE_DIR", env_dir, 1);
    char got[1100];
    CHECK(jit_cache_dir(got, sizeof got, &st) == KS_OK && !strcmp(got, env_dir));
    req.cache_dir = NULL;
    req.lineinfo = 1;
    c = NULL;
    CHECK(jit_compile(&req, &c, &st) == KS_OK && c && !c->cached);
    jit_result_free(c);
    CHECK(count_files(env_dir, ".kjit") == 1);
    unsetenv("KLAB_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/x/y", 1);
    CHECK(jit_cache_dir(got, sizeof got, &st) == KS_OK && !strcmp(got, "/x/y/klab/jit"));
    unsetenv("XDG_CACHE_HOME");
    rm_rf(env_dir);
    snprintf(env_dir, sizeof env_dir, "%s/env", cache_root);
    rmdir(env_dir);

    jit_result_free(a);
    jit_result_free(b);
    rm_rf(dir);
    free(src);
}

/* Two processes compile the same source into a fresh cache at once. */
static void test_concurrency(void)
{
    ks_status st;
    size_t len;
    char *src = sample("wgmma_tile.ptx", &len);
    if (!src)
        return;
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/race", cache_root);
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            jit_result *r = NULL;
            int rc = cached_compile(dir, src, len, &r, &st);
            int ok = rc == KS_OK && r && r->nkernels == 1 && r->cache_note[0] == '\0';
            jit_result_free(r);
            _exit(ok ? 0 : 1);
        }
    }
    for (int i = 0; i < 2; i++) {
        int ws = 0;
        CHECK(pids[i] > 0 && waitpid(pids[i], &ws, 0) == pids[i]);
        CHECKF(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "child %d status %d", i, ws);
    }
    CHECK(count_files(dir, ".kjit") == 1);
    CHECK(count_files(dir, NULL) == 1);
    jit_result *r = NULL;
    CHECK(cached_compile(dir, src, len, &r, &st) == KS_OK && r && r->cached);
    CHECK(r && r->census.count[PTX_WGMMA] == 4);
    jit_result_free(r);
    rm_rf(dir);
    free(src);
}

/* ptxas that hangs is killed at the deadline. */
static void test_timeout(void)
{
    char real[1024], fake[1200];
    jit_ptxas_path(real, sizeof real);
    snprintf(fake, sizeof fake, "%s/fake-ptxas", cache_root);
    FILE *f = fopen(fake, "w");
    if (!f) {
        CHECK(0);
        return;
    }
    fprintf(f, "#!/bin/sh\ncase \"$1\" in\n--version) echo 'Cuda compilation tools, release 0.0, V0.0.1';;\n"
               "--help) exec '%s' --help;;\n*) exec sleep 30;;\nesac\n", real);
    fclose(f);
    chmod(fake, 0755);
    setenv("KLAB_PTXAS", fake, 1);
    jit_request req;
    jit_request_init(&req);
    req.source = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n";
    req.source_len = strlen(req.source);
    req.arch = "sm_90a";
    req.use_cache = 0;
    req.timeout_ms = 300;
    ks_status st;
    jit_result *r = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = jit_compile(&req, &r, &st);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECKF(rc == KS_ETIMEOUT, "rc %s %s", ks_code_name(rc), st.msg);
    CHECK(r == NULL);
    CHECKF(s < 10, "took %.1f s", s);
    char v[64];
    CHECK(jit_ptxas_version(v, sizeof v, &st) == KS_OK && !strcmp(v, "0.0.1"));

    setenv("KLAB_PTXAS", "/nonexistent/ptxas", 1);
    CHECK(jit_compile(&req, &r, &st) == KS_ENOTFOUND);
    CHECK(strstr(st.msg, "/nonexistent/ptxas") != NULL);
    unsetenv("KLAB_PTXAS");
    unlink(fake);
}

static void test_detect(void)
{
    CHECK(jit_detect_lang("a.ptx", "int x;", 6) == JIT_LANG_PTX);
    CHECK(jit_detect_lang("a.cu", ".version 8.0", 12) == JIT_LANG_CUDA);
    const char *ptx = "// header\n  .version 8.0\n.target sm_90a\n";
    CHECK(jit_detect_lang(NULL, ptx, strlen(ptx)) == JIT_LANG_PTX);
    const char *cu = "// .version in a comment\n__global__ void k() {}\n";
    CHECK(jit_detect_lang("kernel", cu, strlen(cu)) == JIT_LANG_CUDA);
    CHECK(!strcmp(jit_lang_name(JIT_LANG_PTX), "ptx") && !strcmp(jit_lang_name(JIT_LANG_CUDA), "cuda"));
}

/* How the compiler child says it is held; with nothing holding its reads,
 * a refusal that says how to opt in, and the opt-in recorded. */
static void test_confinement(void)
{
    char how[96];
    ks_status st;
    unsetenv("KLAB_ALLOW_UNCONFINED_COMPILER");
    CHECK(jit_confinement(1, 1, 1, "", how, sizeof how, &st) == KS_OK && !strcmp(how, "open guard, Landlock, seccomp"));
    CHECK(jit_confinement(1, 0, 1, "", how, sizeof how, &st) == KS_OK && !strcmp(how, "open guard, seccomp"));
    CHECK(jit_confinement(0, 1, 0, "", how, sizeof how, &st) == KS_OK && !strcmp(how, "Landlock"));
    CHECK(jit_confinement(0, 0, 1, "no Landlock", how, sizeof how, &st) == KS_EUNSUPPORTED);
    CHECKF(strstr(st.msg, "cannot be held to the toolkit here (no Landlock)") &&
               strstr(st.msg, "set KLAB_ALLOW_UNCONFINED_COMPILER=1"), "%s", st.msg);
    setenv("KLAB_ALLOW_UNCONFINED_COMPILER", "1", 1);
    CHECK(jit_confinement(0, 0, 1, "no Landlock", how, sizeof how, &st) == KS_OK &&
          !strcmp(how, "unconfined (KLAB_ALLOW_UNCONFINED_COMPILER=1)"));
    unsetenv("KLAB_ALLOW_UNCONFINED_COMPILER");
}

/* Whose code a request compiles and its limits (jit_request_trust): klab's
 * judge kernels exactly as klab.judge.source() builds them are trusted and
 * unlimited; anything else, however close, is a candidate's. */
static void test_trust(void)
{
    size_t np, nj;
    const char *pre = devkern_prelude(&np), *judge = devkern_source(&nj);
    const char *line = "\n#line 1 \"judge.cu\"\n";
    size_t nl = strlen(line);
    char *own = malloc(np + nl + nj + 16), *near = malloc(np + nl + nj + 16);
    memcpy(own, pre, np);
    memcpy(own + np, line, nl);
    memcpy(own + np + nl, judge, nj);
    /* The same with one more line between the #line directive and the judge. */
    memcpy(near, own, np + nl);
    memcpy(near + np + nl, "int x;\n", 7);
    memcpy(near + np + nl + 7, judge, nj);

    jit_request req;
    ks_status st;
    jit_request_init(&req);
    req.source = own;
    req.source_len = np + nl + nj;
    CHECK(jit_request_trust(&req, NULL, &st) == KS_OK);
    CHECK(req.trusted == 1 && req.limit_memory == 0 && req.limit_cpu_s == 0);
    jit_limits cpu1 = {0, 1, 0, 1};
    CHECK(jit_request_trust(&req, &cpu1, &st) == KS_OK && req.trusted && req.limit_cpu_s == 1 && req.limit_memory == 0);

    req.source = near;
    req.source_len = np + nl + 7 + nj;
    CHECK(jit_request_trust(&req, NULL, &st) == KS_OK);
    CHECK(req.trusted == 0 && req.limit_memory == JIT_CANDIDATE_MEMORY && req.limit_cpu_s == JIT_CANDIDATE_CPU_S);
    req.source = pre;
    req.source_len = np;
    CHECK(jit_request_trust(&req, NULL, &st) == KS_OK && !req.trusted);
    /* Asked limits replace the defaults one by one; 0 is none. */
    jit_limits mem = {1, 0, 256 << 20, 0};
    CHECK(jit_request_trust(&req, &mem, &st) == KS_OK && req.limit_memory == 256 << 20 &&
          req.limit_cpu_s == JIT_CANDIDATE_CPU_S);
    jit_limits none = {1, 1, 0, 0};
    CHECK(jit_request_trust(&req, &none, &st) == KS_OK && !req.trusted && req.limit_memory == 0 && req.limit_cpu_s == 0);
    jit_limits bad[] = {{1, 0, -1, 0}, {0, 1, 0, -1}, {0, 1, 0, 86401}};
    for (size_t i = 0; i < 3; i++) {
        CHECK(jit_request_trust(&req, &bad[i], &st) == KS_EINVAL);
        CHECK(strstr(st.msg, "limits must be positive") != NULL);
    }
    free(own);
    free(near);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_prog = "test_jit";
    test_trust();
    test_sha256();
    test_census();
    test_detect();
    test_confinement();
    if (!find_samples(argv[0])) {
        SKIP("tasks/samples not found (run from the repository root)");
        return check_done();
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(cache_root, sizeof cache_root, "%s/klab-test-jit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(cache_root)) {
        CHECKF(0, "mkdtemp: %s", strerror(errno));
        return check_done();
    }
    /* Never touch the user's cache. */
    setenv("KLAB_CACHE_DIR", cache_root, 1);
    unsetenv("KLAB_PTXAS");

    ks_status st;
    char v[64];
    have_ptxas = jit_ptxas_version(v, sizeof v, &st) == KS_OK;
    have_nvrtc = dynlib_get(&dynlib_nvrtc, &st) != NULL;
    test_dynlib();
    if (have_ptxas) {
        test_ptxas();
        test_rejections();
        test_cache();
        test_concurrency();
        test_timeout();
    } else
        SKIP("ptxas not found: set CUDA_HOME");
    if (have_nvrtc && have_ptxas)
        test_nvrtc();
    else
        SKIP("NVRTC not found");
    rm_rf(cache_root);
    return check_done();
}
