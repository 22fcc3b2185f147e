/*
 * test_cuda.c: the CUDA driver layer (host/driver/cuda.h).
 *
 * Everywhere: arch naming, sticky classification, result names, image
 * checks, and the loader's failures in child processes (a missing library,
 * a library that is not a driver). Without a driver: every operation fails
 * with KS_ENODRIVER and the same message. With a GPU: devices, a context,
 * memory, a PTX kernel loaded through the driver JIT, its attributes and
 * parameter layout, launches (with a cluster), events, streams, and last a
 * faulting kernel that must leave a sticky error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "driver/cuda.h"  /* not <cuda.h>: CUDA's own header comes first on the path */

#define NODRIVER "no CUDA driver found"

static int starts_with(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* Runs the loader in a child with the environment variable var set to val;
 * returns its status code and message. Must run before this process touches
 * the driver (no fork after cuInit). */
static int child_load(const char *var, const char *val, char *msg, size_t n)
{
    int fd[2];
    msg[0] = '\0';
    if (pipe(fd) != 0)
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(fd[0]);
        setenv(var, val, 1);
        ks_status st;
        ks_clear(&st);
        int rc = cuda_load(&st);
        char out[KS_MSG_MAX + 16];
        int len = snprintf(out, sizeof out, "%d|%s", rc, st.msg);
        if (write(fd[1], out, (size_t)len) < 0)
            _exit(2);
        _exit(0);
    }
    close(fd[1]);
    char buf[KS_MSG_MAX + 16];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof buf - 1 && (r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    close(fd[0]);
    int wst;
    waitpid(pid, &wst, 0);
    char *bar = strchr(buf, '|');
    if (!bar)
        return 1;
    snprintf(msg, n, "%s", bar + 1);
    return atoi(buf);
}

/* What a child saw with CUDA_VISIBLE_DEVICES empty; checked once this
 * process knows whether a driver exists. */
static int hidden_rc;
static char hidden_msg[KS_MSG_MAX];

static void test_loader_children(void)
{
    char msg[KS_MSG_MAX];
    int rc = child_load("KLAB_LIBCUDA", "/nonexistent/klab/libcuda.so.1", msg, sizeof msg);
    CHECKF(rc == KS_ENODRIVER, "rc %d", rc);
    CHECKF(starts_with(msg, NODRIVER ": ") && strstr(msg, "/nonexistent/klab/libcuda.so.1"),
           "%s", msg);

    /* A real library that is not a CUDA driver. */
    rc = child_load("KLAB_LIBCUDA", "libm.so.6", msg, sizeof msg);
    CHECKF(rc == KS_ENODRIVER, "rc %d", rc);
    CHECKF(starts_with(msg, NODRIVER) && strstr(msg, "cuGetProcAddress"), "%s", msg);

    /* A driver that sees no device (on a GPU machine: all of them hidden). */
    hidden_rc = child_load("CUDA_VISIBLE_DEVICES", "", hidden_msg, sizeof hidden_msg);
}

static void test_arch(void)
{
    char b[16];
    cuda_arch_name(9, 0, b, sizeof b);
    CHECKF(strcmp(b, "sm_90a") == 0, "%s", b);
    cuda_arch_name(10, 0, b, sizeof b);
    CHECKF(strcmp(b, "sm_100a") == 0, "%s", b);
    cuda_arch_name(8, 9, b, sizeof b);
    CHECKF(strcmp(b, "sm_89") == 0, "%s", b);
    cuda_arch_name(8, 0, b, sizeof b);
    CHECKF(strcmp(b, "sm_80") == 0, "%s", b);
    cuda_arch_name(12, 0, b, sizeof b);
    CHECKF(strcmp(b, "sm_120") == 0, "%s", b);
    char tiny[4];
    cuda_arch_name(10, 0, tiny, sizeof tiny);
    CHECKF(strcmp(tiny, "sm_") == 0, "truncated to '%s'", tiny);
}

static void test_sticky(void)
{
    static const int sticky[] = {700, 716, 719, 714, 715, 718, 717, 710, 702, 709};
    static const int benign[] = {0, 1, 2, 101, 200, 209, 218, 500, 600, 701, 720, 912};
    for (size_t i = 0; i < sizeof sticky / sizeof sticky[0]; i++)
        CHECKF(cuda_result_is_sticky(sticky[i]), "%d should be sticky", sticky[i]);
    for (size_t i = 0; i < sizeof benign / sizeof benign[0]; i++)
        CHECKF(!cuda_result_is_sticky(benign[i]), "%d should not be sticky", benign[i]);
}

static void test_names(void)
{
    CHECK(strcmp(cuda_result_name(700), "CUDA_ERROR_ILLEGAL_ADDRESS") == 0);
    CHECK(strcmp(cuda_result_name(719), "CUDA_ERROR_LAUNCH_FAILED") == 0);
    CHECK(strcmp(cuda_result_name(2), "CUDA_ERROR_OUT_OF_MEMORY") == 0);

    ks_status st;
    ks_clear(&st);
    CHECK(cuda_fail(&st, 0, "x") == KS_OK && st.code == KS_OK);
    CHECK(cuda_fail(&st, 2, "cuMemAlloc") == KS_ENOMEM);
    CHECK(st.sub == 2);
    CHECKF(starts_with(st.msg, "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)"), "%s", st.msg);
    CHECK(cuda_fail(&st, 700, "cuCtxSynchronize") == KS_ECUDA && st.sub == 700);
    CHECKF(strstr(st.msg, "CUDA_ERROR_ILLEGAL_ADDRESS (700)") != NULL, "%s", st.msg);
}

/* A minimal 64-bit little-endian ELF header with the given section table. */
static void make_elf(unsigned char *b, size_t n, uint64_t shoff, uint16_t shnum)
{
    memset(b, 0, n);
    memcpy(b, "\x7f" "ELF", 4);
    b[4] = 2;
    b[5] = 1;
    b[6] = 1;
    for (int i = 0; i < 8; i++)
        b[0x28 + i] = (unsigned char)(shoff >> (8 * i));
    b[0x34] = 64;      /* e_ehsize */
    b[0x3a] = 64;      /* e_shentsize */
    b[0x3c] = (unsigned char)shnum;
}

static void test_image_check(void)
{
    ks_status st;
    ks_clear(&st);
    unsigned char b[256];
    int kind = -1;

    make_elf(b, sizeof b, 0, 0);
    CHECKF(cuda_image_check(b, 64, &kind, &st) == KS_OK, "%s", st.msg);
    CHECK(kind == CUDA_IMAGE_CUBIN);
    CHECK(cuda_image_check(b, 40, &kind, &st) == KS_EINVAL);
    CHECKF(strstr(st.msg, "truncated") != NULL, "%s", st.msg);

    /* Two section headers at 64: they end at 192. */
    make_elf(b, sizeof b, 64, 2);
    CHECKF(cuda_image_check(b, 192, &kind, &st) == KS_OK, "%s", st.msg);
    CHECK(cuda_image_check(b, 191, &kind, &st) == KS_EINVAL);

    /* Section 1: PROGBITS at offset 192, 64 bytes: needs 256. */
    unsigned char *sh = b + 64 + 64;
    sh[4] = 1;
    sh[0x18] = 192;
    sh[0x20] = 64;
    CHECKF(cuda_image_check(b, 256, &kind, &st) == KS_OK, "%s", st.msg);
    sh[0x20] = 65;
    CHECK(cuda_image_check(b, 256, &kind, &st) == KS_EINVAL);
    CHECKF(strstr(st.msg, "section 1") != NULL, "%s", st.msg);
    sh[4] = 8;   /* NOBITS takes no file space */
    CHECKF(cuda_image_check(b, 256, &kind, &st) == KS_OK, "%s", st.msg);

    /* Big-endian or 32-bit ELF is refused. */
    make_elf(b, sizeof b, 0, 0);
    b[4] = 1;
    CHECK(cuda_image_check(b, 64, &kind, &st) == KS_EINVAL);

    /* Fatbinary: header 16 bytes, payload size 100. */
    unsigned char fb[128];
    memset(fb, 0, sizeof fb);
    fb[0] = 0x50; fb[1] = 0xED; fb[2] = 0x55; fb[3] = 0xBA;
    fb[6] = 16;
    fb[8] = 100;
    CHECKF(cuda_image_check(fb, 116, &kind, &st) == KS_OK, "%s", st.msg);
    CHECK(kind == CUDA_IMAGE_FATBIN);
    CHECK(cuda_image_check(fb, 115, &kind, &st) == KS_EINVAL);

    CHECK(cuda_image_check(".version 8.0", 12, &kind, &st) == KS_OK && kind == CUDA_IMAGE_PTX);
    CHECK(cuda_image_check("", 0, &kind, &st) == KS_EINVAL);
}

static void test_no_driver(const char *reason)
{
    ks_status st;
    int v;
    cuda_props p;
    cuda_ctx *c = (cuda_ctx *)&v;
    CUdeviceptr d = 1;
    CUmodule m = (CUmodule)&v;
    void *fn = &v;

    CHECKF(starts_with(reason, NODRIVER ": "), "%s", reason);
#define EXPECT_NODRIVER(call) do { \
        ks_clear(&st); \
        int rc_ = (call); \
        CHECKF(rc_ == KS_ENODRIVER && st.code == KS_ENODRIVER && strcmp(st.msg, reason) == 0, \
               "%s -> %d %s", #call, rc_, st.msg); \
    } while (0)
    EXPECT_NODRIVER(cuda_load(&st));
    EXPECT_NODRIVER(cuda_driver_version(&v, &st));
    EXPECT_NODRIVER(cuda_device_count(&v, &st));
    EXPECT_NODRIVER(cuda_device_props(0, &p, &st));
    EXPECT_NODRIVER(cuda_ctx_open(0, &c, &st));
    CHECK(c == NULL);
    EXPECT_NODRIVER(cuda_proc("cuTensorMapEncodeTiled", CUDA_VERSION, &fn, &st));
    CHECK(fn == NULL);
    EXPECT_NODRIVER(cuda_ctx_sync(NULL, &st));
    EXPECT_NODRIVER(cuda_mem_info(NULL, NULL, NULL, &st));
    EXPECT_NODRIVER(cuda_mem_alloc(NULL, 1024, &d, &st));
    CHECK(d == 0);
    EXPECT_NODRIVER(cuda_module_load(NULL, ".version 8.0", 12, &m, NULL, 0, &st));
    CHECK(m == NULL);
    cuda_launch l = {{1, 1, 1}, {32, 1, 1}, {0, 0, 0}, 0, NULL};
    EXPECT_NODRIVER(cuda_launch_kernel(NULL, NULL, &l, NULL, &st));
    CUstream s;
    EXPECT_NODRIVER(cuda_stream_create(NULL, &s, &st));
    CUevent e;
    EXPECT_NODRIVER(cuda_event_create(NULL, &e, &st));
#undef EXPECT_NODRIVER
    /* Closing nothing is fine. */
    CHECK(cuda_ctx_close(NULL, &st) == KS_OK);
}

static const char vadd_ptx[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry vadd(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 pn)\n"
    "{\n"
    "  .reg .pred %p;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .f32 %f<4>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [pa];\n"
    "  ld.param.u64 %rd2, [pb];\n"
    "  ld.param.u64 %rd3, [pc];\n"
    "  ld.param.u32 %r1, [pn];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p, %r5, %r1;\n"
    "  @%p bra DONE;\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  cvta.to.global.u64 %rd2, %rd2;\n"
    "  cvta.to.global.u64 %rd3, %rd3;\n"
    "  mul.wide.u32 %rd4, %r5, 4;\n"
    "  add.s64 %rd5, %rd1, %rd4;\n"
    "  add.s64 %rd6, %rd2, %rd4;\n"
    "  add.s64 %rd7, %rd3, %rd4;\n"
    "  ld.global.f32 %f1, [%rd5];\n"
    "  ld.global.f32 %f2, [%rd6];\n"
    "  add.f32 %f3, %f1, %f2;\n"
    "  st.global.f32 [%rd7], %f3;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n"
    ".visible .entry fault()\n"
    "{\n"
    "  .reg .b32 %r<2>;\n"
    "  .reg .b64 %rd<2>;\n"
    "  mov.u64 %rd1, 16;\n"
    "  mov.u32 %r1, 1;\n"
    "  st.global.u32 [%rd1], %r1;\n"
    "  ret;\n"
    "}\n";

static void test_gpu(void)
{
    ks_status st;
    ks_clear(&st);
    int v = 0, n = 0;
    CHECKF(cuda_driver_version(&v, &st) == KS_OK && v >= 12000, "%d %s", v, st.msg);
    CHECKF(cuda_device_count(&n, &st) == KS_OK && n >= 1, "%d %s", n, st.msg);

    cuda_props p;
    CHECKF(cuda_device_props(0, &p, &st) == KS_OK, "%s", st.msg);
    char arch[16];
    cuda_arch_name(p.major, p.minor, arch, sizeof arch);
    CHECK(strcmp(p.arch, arch) == 0);
    CHECK(p.name[0] != '\0');
    CHECK(p.major >= 7 && p.sm_count > 0 && p.warp_size == 32);
    CHECK(p.total_mem > ((size_t)1 << 30) && p.l2_bytes > 0 && p.regs_per_sm > 0);
    CHECK(p.smem_per_block_optin >= 48 * 1024 && p.smem_per_sm >= p.smem_per_block_optin);
    CHECK(p.max_threads_per_block >= 512 && p.clock_khz > 0 && p.mem_clock_khz > 0);
    CHECK(p.bus_width_bits > 0);
    CHECKF(starts_with(p.uuid_str, "GPU-") && strlen(p.uuid_str) == 40, "%s", p.uuid_str);
    CHECKF(strchr(p.pci_bus_id, ':') != NULL, "%s", p.pci_bus_id);
    printf("device 0: %s %s, %d SMs, %zu MiB, %d kHz, L2 %d, smem optin %d, driver %d\n",
           p.name, p.arch, p.sm_count, p.total_mem >> 20, p.clock_khz, p.l2_bytes,
           p.smem_per_block_optin, v);
    CHECK(cuda_device_props(n, &p, &st) == KS_EINVAL);

    void *fn = NULL;
    CHECKF(cuda_proc("cuTensorMapEncodeTiled", CUDA_VERSION, &fn, &st) == KS_OK && fn, "%s", st.msg);
    CHECK(cuda_proc("cuNoSuchFunction", CUDA_VERSION, &fn, &st) == KS_ENOTFOUND && fn == NULL);

    cuda_ctx *c = NULL;
    if (cuda_ctx_open(0, &c, &st) != KS_OK) {
        CHECKF(0, "cuda_ctx_open: %s", st.msg);
        return;
    }
    size_t fr = 0, total = 0;
    CHECKF(cuda_mem_info(c, &fr, &total, &st) == KS_OK && fr > 0 && fr <= total, "%s", st.msg);

    /* Memory: fill, copy, read back. */
    enum { N = 1000 };
    CUdeviceptr a, b, out;
    CHECK(cuda_mem_alloc(c, N * 4, &a, &st) == KS_OK);
    CHECK(cuda_mem_alloc(c, N * 4, &b, &st) == KS_OK);
    CHECK(cuda_mem_alloc(c, N * 4, &out, &st) == KS_OK);
    CUdeviceptr zero = 1;
    CHECK(cuda_mem_alloc(c, 0, &zero, &st) == KS_EINVAL && zero == 0);
    float ha[N], hb[N], hc[N];
    for (int i = 0; i < N; i++) {
        ha[i] = (float)i;
        hb[i] = 0.5f * (float)i;
    }
    CHECK(cuda_memcpy_htod(c, a, ha, sizeof ha, &st) == KS_OK);
    CHECK(cuda_memcpy_htod(c, b, hb, sizeof hb, &st) == KS_OK);
    CHECK(cuda_memset_d32(c, out, 0x7fc00000u, N, &st) == KS_OK);
    CHECK(cuda_memcpy_dtoh(c, hc, out, sizeof hc, &st) == KS_OK);
    uint32_t w;
    memcpy(&w, &hc[N - 1], 4);
    CHECK(w == 0x7fc00000u);
    CHECK(cuda_memset_d8(c, out, 0xab, 7, &st) == KS_OK);
    unsigned char bytes[8];
    CHECK(cuda_memcpy_dtoh(c, bytes, out, 8, &st) == KS_OK);
    CHECK(bytes[6] == 0xab && bytes[7] == 0x7f);  /* 0x7fc00000 little-endian: 00 00 c0 7f */
    CHECK(cuda_memcpy_dtod(c, out, a, N * 4, &st) == KS_OK);
    CHECK(cuda_memcpy_dtoh(c, hc, out, sizeof hc, &st) == KS_OK);
    CHECK(memcmp(hc, ha, sizeof ha) == 0);

    /* A bad module: the driver's log comes back. */
    char log[4096];
    CUmodule m = NULL;
    int rc = cuda_module_load(c, "this is not ptx", 15, &m, log, sizeof log, &st);
    CHECKF(rc == KS_ECUDA && m == NULL && st.sub != 0, "%d %s", rc, st.msg);
    CHECKF(log[0] != '\0', "empty JIT log for a bad module (%s)", st.msg);

    /* The PTX through the driver JIT. */
    rc = cuda_module_load(c, vadd_ptx, sizeof vadd_ptx - 1, &m, log, sizeof log, &st);
    CHECKF(rc == KS_OK && m, "%s | %s", st.msg, log);
    if (rc != KS_OK) {
        cuda_ctx_close(c, &st);
        return;
    }
    CUfunction f = NULL, ff = NULL, nf = NULL;
    CHECK(cuda_func_get(c, m, "vadd", &f, &st) == KS_OK && f);
    CHECK(cuda_func_get(c, m, "fault", &ff, &st) == KS_OK && ff);
    CHECK(cuda_func_get(c, m, "nope", &nf, &st) == KS_ENOTFOUND && nf == NULL);
    CHECKF(strstr(st.msg, "'nope'") != NULL, "%s", st.msg);

    cuda_func_attrs at;
    CHECKF(cuda_func_attributes(c, f, &at, &st) == KS_OK, "%s", st.msg);
    CHECK(at.num_regs > 0 && at.max_threads > 0 && at.local_bytes == 0 && at.static_smem == 0);
    CHECKF(at.binary_version == p.major * 10 + p.minor, "binary version %d", at.binary_version);

    cuda_param *pp = NULL;
    size_t np = 0;
    rc = cuda_func_params(c, f, &pp, &np, &st);
    if (rc == KS_EUNSUPPORTED) {
        SKIP(st.msg);
    } else {
        CHECKF(rc == KS_OK && np == 4, "%d %zu %s", rc, np, st.msg);
        if (np == 4) {
            CHECK(pp[0].offset == 0 && pp[0].size == 8);
            CHECK(pp[1].offset == 8 && pp[1].size == 8);
            CHECK(pp[2].offset == 16 && pp[2].size == 8);
            CHECK(pp[3].offset == 24 && pp[3].size == 4);
        }
        free(pp);
        CHECK(cuda_func_params(c, ff, &pp, &np, &st) == KS_OK && np == 0 && pp == NULL);
    }

    /* Launch on a stream between events. */
    CUstream s = NULL;
    CUevent e0 = NULL, e1 = NULL;
    CHECK(cuda_stream_create(c, &s, &st) == KS_OK && s);
    CHECK(cuda_event_create(c, &e0, &st) == KS_OK && e0);
    CHECK(cuda_event_create(c, &e1, &st) == KS_OK && e1);
    unsigned un = N;
    void *params[] = {&a, &b, &out, &un};
    cuda_launch l = {{(N + 127) / 128, 1, 1}, {128, 1, 1}, {0, 0, 0}, 0, s};
    CHECK(cuda_memset_d8(c, out, 0, N * 4, &st) == KS_OK);
    CHECK(cuda_event_record(c, e0, s, &st) == KS_OK);
    CHECKF(cuda_launch_kernel(c, f, &l, params, &st) == KS_OK, "%s", st.msg);
    CHECK(cuda_event_record(c, e1, s, &st) == KS_OK);
    CHECK(cuda_event_sync(c, e1, &st) == KS_OK);
    float ms = -1;
    CHECKF(cuda_event_elapsed(c, e0, e1, &ms, &st) == KS_OK && ms >= 0 && ms < 1000, "%f %s", ms,
           st.msg);
    CHECK(cuda_stream_sync(c, s, &st) == KS_OK);
    CHECK(cuda_memcpy_dtoh(c, hc, out, sizeof hc, &st) == KS_OK);
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += hc[i] != ha[i] + hb[i];
    CHECKF(wrong == 0, "%d wrong sums", wrong);

    /* Clusters of 2 on the default stream (grid 8 = 4 clusters). */
    if (p.cluster_launch) {
        cuda_launch lc = {{8, 1, 1}, {128, 1, 1}, {2, 1, 1}, 0, NULL};
        CHECK(cuda_memset_d8(c, out, 0, N * 4, &st) == KS_OK);
        CHECKF(cuda_launch_kernel(c, f, &lc, params, &st) == KS_OK, "%s", st.msg);
        CHECKF(cuda_ctx_sync(c, &st) == KS_OK, "%s", st.msg);
        CHECK(cuda_memcpy_dtoh(c, hc, out, sizeof hc, &st) == KS_OK);
        wrong = 0;
        for (int i = 0; i < N; i++)
            wrong += hc[i] != ha[i] + hb[i];
        CHECKF(wrong == 0, "%d wrong sums with clusters", wrong);
    } else {
        SKIP("device has no cluster launch");
    }
    cuda_launch bad = {{3, 1, 1}, {128, 1, 1}, {2, 1, 1}, 0, NULL};
    CHECK(cuda_launch_kernel(c, f, &bad, params, &st) == KS_EINVAL);
    CHECKF(strstr(st.msg, "multiple") != NULL, "%s", st.msg);
    /* Too many threads per block: an ordinary, non-sticky driver error. */
    cuda_launch huge = {{1, 1, 1}, {4096, 1, 1}, {0, 0, 0}, 0, NULL};
    rc = cuda_launch_kernel(c, f, &huge, params, &st);
    CHECKF(rc == KS_ECUDA && !cuda_result_is_sticky(st.sub), "%d %s", rc, st.msg);
    /* Dynamic shared memory above 48 KiB needs the attribute. */
    CHECKF(cuda_func_set_max_dynamic_smem(c, f, p.smem_per_block_optin, &st) == KS_OK, "%s",
           st.msg);
    CHECK(cuda_func_set_max_dynamic_smem(c, f, p.smem_per_block_optin + 1024, &st) == KS_ECUDA);
    CHECKF(cuda_ctx_sync(c, &st) == KS_OK && cuda_ctx_sticky(c) == 0, "%s", st.msg);

    CHECK(cuda_event_destroy(c, e0, &st) == KS_OK);
    CHECK(cuda_event_destroy(c, e1, &st) == KS_OK);
    CHECK(cuda_stream_destroy(c, s, &st) == KS_OK);

    /* Last: a write to address 16 poisons the context for good. */
    cuda_launch l1 = {{1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 0, NULL};
    rc = cuda_launch_kernel(c, ff, &l1, NULL, &st);
    if (rc == KS_OK)
        rc = cuda_ctx_sync(c, &st);
    CHECKF(rc == KS_ECUDA && cuda_result_is_sticky(st.sub), "%d %s", rc, st.msg);
    CHECKF(cuda_ctx_sticky(c) == st.sub, "%d vs %d", cuda_ctx_sticky(c), st.sub);
    printf("fault: %s\n", st.msg);
    CUdeviceptr after = 0;
    rc = cuda_mem_alloc(c, 64, &after, &st);
    CHECKF(rc != KS_OK && after == 0, "allocation after a sticky error: %s", st.msg);

    /* Releasing after the fault must not crash. */
    cuda_mem_free(c, a, &st);
    cuda_mem_free(c, b, &st);
    cuda_mem_free(c, out, &st);
    cuda_module_unload(c, m, &st);
    cuda_ctx_close(c, &st);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_prog = argv[0];
    /* Children first: nothing may fork after this process runs cuInit. */
    test_loader_children();
    test_arch();
    test_sticky();
    test_names();
    test_image_check();

    char reason[KS_MSG_MAX];
    int have = cuda_available(reason, sizeof reason);
    CHECKF(hidden_rc == KS_ENODRIVER, "rc %d", hidden_rc);
    if (have || !starts_with(reason, NODRIVER))
        CHECKF(starts_with(hidden_msg, "no CUDA device found: "), "%s", hidden_msg);
    else
        CHECKF(strcmp(hidden_msg, reason) == 0, "%s", hidden_msg);
    if (have) {
        test_gpu();
    } else {
        if (starts_with(reason, NODRIVER))
            test_no_driver(reason);
        else
            SKIP(reason);  /* a driver without a usable device */
        SKIP("GPU tests: no CUDA device");
    }
    return check_done();
}
