/*
 * cuda.c: the CUDA driver layer (see cuda.h).
 *
 * The driver is opened with dlopen and every entry point is resolved through
 * cuGetProcAddress with an explicit version, because the plain exported
 * names are the legacy ABIs (dlsym("cuMemAlloc") is the 32-bit-size one,
 * dlsym("cuCtxCreate") lacks CUDA 13's params argument). The function pointer
 * types come from cudaTypedefs.h, so the compiler checks every call against
 * the exact versioned signature.
 */
#include "driver/cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#ifndef CUDA_VERSION
#error "cuda.h did not define CUDA_VERSION"
#endif

/*
 * The driver entry points: X(name, pointer type, version asked for, required).
 *
 * Every entry is asked for at the toolkit's CUDA_VERSION except
 * cuCtxSynchronize: CUDA 13.0 added cuCtxSynchronize_v2(CUcontext) under the
 * same base name, so the version decides the ABI. Asking for 2000 gives the
 * (void) form on every driver, which syncs the current context; we always
 * make the context current first. (At 13000 a 12.x driver would hand back
 * the (void) form while a 13.x driver hands back the (CUcontext) one.)
 */
#define CUDA_ENTRY_POINTS(X)                                                   \
    X(cuGetErrorName, PFN_cuGetErrorName_v6000, CUDA_VERSION, 0)               \
    X(cuGetErrorString, PFN_cuGetErrorString_v6000, CUDA_VERSION, 0)           \
    X(cuInit, PFN_cuInit_v2000, CUDA_VERSION, 1)                               \
    X(cuDriverGetVersion, PFN_cuDriverGetVersion_v2020, CUDA_VERSION, 1)       \
    X(cuDeviceGet, PFN_cuDeviceGet_v2000, CUDA_VERSION, 1)                     \
    X(cuDeviceGetCount, PFN_cuDeviceGetCount_v2000, CUDA_VERSION, 1)           \
    X(cuDeviceGetName, PFN_cuDeviceGetName_v2000, CUDA_VERSION, 1)             \
    X(cuDeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000, CUDA_VERSION, 1)   \
    X(cuDeviceTotalMem, PFN_cuDeviceTotalMem_v3020, CUDA_VERSION, 1)           \
    X(cuDeviceGetUuid, PFN_cuDeviceGetUuid_v11040, CUDA_VERSION, 1)            \
    X(cuDeviceGetPCIBusId, PFN_cuDeviceGetPCIBusId_v4010, CUDA_VERSION, 1)     \
    X(cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000, CUDA_VERSION, 1) \
    X(cuDevicePrimaryCtxRelease, PFN_cuDevicePrimaryCtxRelease_v11000, CUDA_VERSION, 1) \
    X(cuCtxSetCurrent, PFN_cuCtxSetCurrent_v4000, CUDA_VERSION, 1)             \
    X(cuCtxSynchronize, PFN_cuCtxSynchronize_v2000, 2000, 1)                   \
    X(cuModuleLoadDataEx, PFN_cuModuleLoadDataEx_v2010, CUDA_VERSION, 1)       \
    X(cuModuleUnload, PFN_cuModuleUnload_v2000, CUDA_VERSION, 1)               \
    X(cuModuleGetFunction, PFN_cuModuleGetFunction_v2000, CUDA_VERSION, 1)     \
    X(cuModuleGetGlobal, PFN_cuModuleGetGlobal_v3020, CUDA_VERSION, 1)          \
    X(cuFuncGetAttribute, PFN_cuFuncGetAttribute_v2020, CUDA_VERSION, 1)       \
    X(cuFuncSetAttribute, PFN_cuFuncSetAttribute_v9000, CUDA_VERSION, 1)       \
    X(cuFuncGetParamInfo, PFN_cuFuncGetParamInfo_v12040, CUDA_VERSION, 0)      \
    X(cuLaunchKernelEx, PFN_cuLaunchKernelEx_v11060, CUDA_VERSION, 1)          \
    X(cuMemAlloc, PFN_cuMemAlloc_v3020, CUDA_VERSION, 1)                       \
    X(cuMemFree, PFN_cuMemFree_v3020, CUDA_VERSION, 1)                         \
    X(cuMemcpyHtoD, PFN_cuMemcpyHtoD_v3020, CUDA_VERSION, 1)                   \
    X(cuMemcpyDtoH, PFN_cuMemcpyDtoH_v3020, CUDA_VERSION, 1)                   \
    X(cuMemcpyDtoD, PFN_cuMemcpyDtoD_v3020, CUDA_VERSION, 1)                   \
    X(cuMemsetD8, PFN_cuMemsetD8_v3020, CUDA_VERSION, 1)                       \
    X(cuMemsetD32, PFN_cuMemsetD32_v3020, CUDA_VERSION, 1)                     \
    X(cuMemGetInfo, PFN_cuMemGetInfo_v3020, CUDA_VERSION, 1)                   \
    X(cuStreamCreate, PFN_cuStreamCreate_v2000, CUDA_VERSION, 1)               \
    X(cuStreamDestroy, PFN_cuStreamDestroy_v4000, CUDA_VERSION, 1)             \
    X(cuStreamSynchronize, PFN_cuStreamSynchronize_v2000, CUDA_VERSION, 1)     \
    X(cuEventCreate, PFN_cuEventCreate_v2000, CUDA_VERSION, 1)                 \
    X(cuEventDestroy, PFN_cuEventDestroy_v4000, CUDA_VERSION, 1)               \
    X(cuEventRecord, PFN_cuEventRecord_v2000, CUDA_VERSION, 1)                 \
    X(cuEventSynchronize, PFN_cuEventSynchronize_v2000, CUDA_VERSION, 1)       \
    X(cuEventElapsedTime, PFN_cuEventElapsedTime_v12080, CUDA_VERSION, 1)

/* Member names are p_<base name>; token pasting uses the unexpanded
 * argument, so cuda.h's "#define cuMemAlloc cuMemAlloc_v2" does not apply. */
static struct {
#define X(name, type, ver, req) type p_##name;
    CUDA_ENTRY_POINTS(X)
#undef X
} api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static ks_status load_st;          /* KS_OK once the driver is usable */
static void *lib;
static PFN_cuGetProcAddress_v12000 gpa2;
static PFN_cuGetProcAddress_v11030 gpa1;
/* Set (release) once every entry point is resolved and the library will stay
 * open; from then on cuGetErrorName/String may be used from any thread. */
static atomic_int names_ready;

/* ---- CUresult names ---- */

static const struct { int code; const char *name; } builtin_names[] = {
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {200, "CUDA_ERROR_INVALID_IMAGE"},
    {201, "CUDA_ERROR_INVALID_CONTEXT"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE"},
    {218, "CUDA_ERROR_INVALID_PTX"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    {226, "CUDA_ERROR_CONTAINED"},
    {400, "CUDA_ERROR_INVALID_HANDLE"},
    {500, "CUDA_ERROR_NOT_FOUND"},
    {600, "CUDA_ERROR_NOT_READY"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED"},
    {710, "CUDA_ERROR_ASSERT"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"},
    {718, "CUDA_ERROR_INVALID_PC"},
    {719, "CUDA_ERROR_LAUNCH_FAILED"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK"},
    {801, "CUDA_ERROR_NOT_SUPPORTED"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED"},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE"},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

int cuda_result_is_sticky(int r)
{
    switch (r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:        /* 214 */
    case CUDA_ERROR_CONTAINED:                /* 226 */
    case CUDA_ERROR_ILLEGAL_ADDRESS:          /* 700 */
    case CUDA_ERROR_LAUNCH_TIMEOUT:           /* 702 */
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:     /* 709: what later calls return */
    case CUDA_ERROR_ASSERT:                   /* 710 */
    case CUDA_ERROR_HARDWARE_STACK_ERROR:     /* 714 */
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:      /* 715 */
    case CUDA_ERROR_MISALIGNED_ADDRESS:       /* 716 */
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:    /* 717 */
    case CUDA_ERROR_INVALID_PC:               /* 718 */
    case CUDA_ERROR_LAUNCH_FAILED:            /* 719 */
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:       /* 721 */
    case CUDA_ERROR_MPS_CLIENT_TERMINATED:    /* 810 */
    case CUDA_ERROR_EXTERNAL_DEVICE:          /* 911 */
    case CUDA_ERROR_UNKNOWN:                  /* 999: nothing says the context survived */
        return 1;
    default:
        return 0;
    }
}

const char *cuda_result_name(int r)
{
    static _Thread_local char unknown[40];
    if (atomic_load_explicit(&names_ready, memory_order_acquire) && api.p_cuGetErrorName) {
        const char *s = NULL;
        if (api.p_cuGetErrorName((CUresult)r, &s) == CUDA_SUCCESS && s)
            return s;
    }
    for (size_t i = 0; i < sizeof builtin_names / sizeof builtin_names[0]; i++)
        if (builtin_names[i].code == r)
            return builtin_names[i].name;
    snprintf(unknown, sizeof unknown, "CUDA_ERROR_%d", r);
    return unknown;
}

const char *cuda_result_string(int r)
{
    if (atomic_load_explicit(&names_ready, memory_order_acquire) && api.p_cuGetErrorString) {
        const char *s = NULL;
        if (api.p_cuGetErrorString((CUresult)r, &s) == CUDA_SUCCESS && s)
            return s;
    }
    return "";
}

int cuda_fail(ks_status *st, int r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return KS_OK;
    const char *text = cuda_result_string(r);
    int code = r == CUDA_ERROR_OUT_OF_MEMORY ? KS_ENOMEM : KS_ECUDA;
    return ks_fail(st, code, r, "%s: %s (%d)%s%s", what, cuda_result_name(r), r,
                   text[0] ? ": " : "", text);
}

/* ---- loading ---- */

/* Resolves one entry point; 0 on success. */
static int resolve(const char *name, int version, void **fn, int *qres)
{
    *fn = NULL;
    *qres = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult r;
    if (gpa2) {
        CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SUCCESS;
        r = gpa2(name, fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &q);
        *qres = (int)q;
        if (r == CUDA_SUCCESS && q != CU_GET_PROC_ADDRESS_SUCCESS)
            r = CUDA_ERROR_NOT_FOUND;
    } else {
        r = gpa1(name, fn, version, CU_GET_PROC_ADDRESS_DEFAULT);
    }
    if (r != CUDA_SUCCESS || *fn == NULL) {
        *fn = NULL;
        return -1;
    }
    return 0;
}

static const char *qres_text(int q)
{
    switch (q) {
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: return "symbol not found";
    case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT: return "driver version not sufficient";
    default: return "lookup failed";
    }
}

static void load_driver(void)
{
    const char *path = getenv("KLAB_LIBCUDA");
    if (!path || !path[0])
        path = "libcuda.so.1";
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        ks_fail(&load_st, KS_ENODRIVER, 0, "no CUDA driver found: %s",
                e ? e : "dlopen failed");
        return;
    }
    gpa2 = (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
    if (!gpa2)
        gpa1 = (PFN_cuGetProcAddress_v11030)dlsym(h, "cuGetProcAddress");
    if (!gpa2 && !gpa1) {
        ks_fail(&load_st, KS_ENODRIVER, 0,
                "no CUDA driver found: %s has neither cuGetProcAddress_v2 nor "
                "cuGetProcAddress (not a CUDA driver, or older than CUDA 11.3)", path);
        dlclose(h);
        return;
    }

    int q;
#define X(name, type, ver, req)                                                   \
    if (resolve(#name, ver, (void **)&api.p_##name, &q) != 0 && req) {            \
        ks_fail(&load_st, KS_ENODRIVER, 0,                                        \
                "no CUDA driver found: the driver in %s lacks %s for CUDA %d.%d (%s); " \
                "it is too old for this build",                                   \
                path, #name, (ver) / 1000, (ver) % 1000 / 10, qres_text(q));      \
        memset(&api, 0, sizeof api);                                              \
        gpa1 = NULL;                                                              \
        gpa2 = NULL;                                                              \
        dlclose(h);                                                               \
        return;                                                                   \
    }
    CUDA_ENTRY_POINTS(X)
#undef X

    /* From here on the library stays open: the driver may have started
     * threads or registered handlers. */
    lib = h;
    atomic_store_explicit(&names_ready, 1, memory_order_release);
    CUresult r = api.p_cuInit(0);
    if (r != CUDA_SUCCESS) {
        const char *text = cuda_result_string(r);
        if (r == CUDA_ERROR_NO_DEVICE)
            ks_fail(&load_st, KS_ENODRIVER, r, "no CUDA device found: cuInit: %s (%d)%s%s",
                    cuda_result_name(r), (int)r, text[0] ? ": " : "", text);
        else
            ks_fail(&load_st, KS_ENODRIVER, r,
                    "CUDA driver failed to initialise: cuInit: %s (%d)%s%s",
                    cuda_result_name(r), (int)r, text[0] ? ": " : "", text);
        return;
    }
    int n = 0;
    r = api.p_cuDeviceGetCount(&n);
    if (r != CUDA_SUCCESS) {
        const char *text = cuda_result_string(r);
        ks_fail(&load_st, KS_ENODRIVER, r, "no CUDA device found: cuDeviceGetCount: %s (%d)%s%s",
                cuda_result_name(r), (int)r, text[0] ? ": " : "", text);
        return;
    }
    if (n <= 0) {
        ks_fail(&load_st, KS_ENODRIVER, 0, "no CUDA device found: the driver reports 0 devices");
        return;
    }
    ks_clear(&load_st);
}

int cuda_load(ks_status *st)
{
    pthread_once(&load_once, load_driver);
    if (load_st.code != KS_OK) {
        *st = load_st;
        return st->code;
    }
    return KS_OK;
}

int cuda_available(char *reason, size_t n)
{
    ks_status st;
    ks_clear(&st);
    if (cuda_load(&st) == KS_OK) {
        if (reason && n)
            reason[0] = '\0';
        return 1;
    }
    if (reason && n)
        snprintf(reason, n, "%s", st.msg);
    return 0;
}

int cuda_proc(const char *name, int version, void **fn, ks_status *st)
{
    if (!name || !fn)
        return ks_fail(st, KS_EINVAL, 0, "cuda_proc: name and fn are required");
    *fn = NULL;
    if (cuda_load(st))
        return st->code;
    int q;
    if (resolve(name, version, fn, &q) != 0)
        return ks_fail(st, KS_ENOTFOUND, 0, "the CUDA driver has no %s for CUDA %d.%d (%s)",
                       name, version / 1000, version % 1000 / 10, qres_text(q));
    return KS_OK;
}

int cuda_driver_version(int *v, ks_status *st)
{
    if (cuda_load(st))
        return st->code;
    return cuda_fail(st, api.p_cuDriverGetVersion(v), "cuDriverGetVersion");
}

int cuda_device_count(int *n, ks_status *st)
{
    if (cuda_load(st))
        return st->code;
    return cuda_fail(st, api.p_cuDeviceGetCount(n), "cuDeviceGetCount");
}

void cuda_arch_name(int major, int minor, char *buf, size_t n)
{
    if (!buf || !n)
        return;
    /* Hopper and Blackwell datacenter parts: wgmma, setmaxnreg, tcgen05 and
     * friends exist only in the arch-specific ("a") targets. */
    if ((major == 9 && minor == 0) || (major == 10 && minor == 0))
        snprintf(buf, n, "sm_%d%da", major, minor);
    else
        snprintf(buf, n, "sm_%d%d", major, minor);
}

static int check_ordinal(int ordinal, CUdevice *dev, ks_status *st)
{
    int n = 0;
    if (cuda_device_count(&n, st))
        return st->code;
    if (ordinal < 0 || ordinal >= n)
        return ks_fail(st, KS_EINVAL, 0, "no CUDA device %d (this machine has %d)", ordinal, n);
    return cuda_fail(st, api.p_cuDeviceGet(dev, ordinal), "cuDeviceGet");
}

int cuda_device_props(int ordinal, cuda_props *p, ks_status *st)
{
    CUdevice dev;
    if (cuda_load(st))
        return st->code;
    if (check_ordinal(ordinal, &dev, st))
        return st->code;
    memset(p, 0, sizeof *p);
    p->ordinal = ordinal;
    CUresult r = api.p_cuDeviceGetName(p->name, (int)sizeof p->name - 1, dev);
    if (r)
        return cuda_fail(st, r, "cuDeviceGetName");
    p->name[sizeof p->name - 1] = '\0';

    static const struct { CUdevice_attribute a; size_t off; const char *what; } attrs[] = {
#define A(attr, field) {attr, offsetof(cuda_props, field), #attr}
        A(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major),
        A(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor),
        A(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sm_count),
        A(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, l2_bytes),
        A(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, smem_per_block_optin),
        A(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, smem_per_sm),
        A(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, max_threads_per_block),
        A(CU_DEVICE_ATTRIBUTE_WARP_SIZE, warp_size),
        A(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, regs_per_sm),
        A(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, clock_khz),
        A(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, mem_clock_khz),
        A(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, bus_width_bits),
        A(CU_DEVICE_ATTRIBUTE_ECC_ENABLED, ecc),
        A(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, compute_mode),
        A(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, cluster_launch),
#undef A
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = 0;
        r = api.p_cuDeviceGetAttribute(&v, attrs[i].a, dev);
        if (r) {
            char what[96];
            snprintf(what, sizeof what, "cuDeviceGetAttribute(%s)", attrs[i].what);
            return cuda_fail(st, r, what);
        }
        memcpy((char *)p + attrs[i].off, &v, sizeof v);
    }
    cuda_arch_name(p->major, p->minor, p->arch, sizeof p->arch);

    if ((r = api.p_cuDeviceTotalMem(&p->total_mem, dev)))
        return cuda_fail(st, r, "cuDeviceTotalMem");
    CUuuid u;
    if ((r = api.p_cuDeviceGetUuid(&u, dev)))
        return cuda_fail(st, r, "cuDeviceGetUuid");
    memcpy(p->uuid, u.bytes, sizeof p->uuid);
    const unsigned char *b = p->uuid;
    snprintf(p->uuid_str, sizeof p->uuid_str,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
             b[12], b[13], b[14], b[15]);
    if ((r = api.p_cuDeviceGetPCIBusId(p->pci_bus_id, (int)sizeof p->pci_bus_id, dev)))
        return cuda_fail(st, r, "cuDeviceGetPCIBusId");
    p->pci_bus_id[sizeof p->pci_bus_id - 1] = '\0';
    return KS_OK;
}

/* ---- context ---- */

struct cuda_ctx {
    int ordinal;
    CUdevice dev;
    CUcontext ctx;
    int sticky;     /* first sticky CUresult seen, 0 if none */
};

/* cuda_fail that also remembers a sticky result on c. */
static int ctx_fail(cuda_ctx *c, ks_status *st, CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return KS_OK;
    if (c && !c->sticky && cuda_result_is_sticky(r))
        c->sticky = r;
    return cuda_fail(st, r, what);
}

int cuda_ctx_open(int ordinal, cuda_ctx **out, ks_status *st)
{
    *out = NULL;
    CUdevice dev;
    if (cuda_load(st))
        return st->code;
    if (check_ordinal(ordinal, &dev, st))
        return st->code;
    cuda_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ks_fail(st, KS_ENOMEM, 0, "out of host memory");
    c->ordinal = ordinal;
    c->dev = dev;
    CUresult r = api.p_cuDevicePrimaryCtxRetain(&c->ctx, dev);
    if (r) {
        free(c);
        return cuda_fail(st, r, "cuDevicePrimaryCtxRetain");
    }
    r = api.p_cuCtxSetCurrent(c->ctx);
    if (r) {
        api.p_cuDevicePrimaryCtxRelease(dev);
        free(c);
        return cuda_fail(st, r, "cuCtxSetCurrent");
    }
    *out = c;
    return KS_OK;
}

int cuda_ctx_close(cuda_ctx *c, ks_status *st)
{
    if (!c)
        return KS_OK;
    CUresult r = api.p_cuDevicePrimaryCtxRelease(c->dev);
    free(c);
    return cuda_fail(st, r, "cuDevicePrimaryCtxRelease");
}

int cuda_ctx_use(cuda_ctx *c, ks_status *st)
{
    if (cuda_load(st))
        return st->code;
    if (!c)
        return ks_fail(st, KS_EINVAL, 0, "no CUDA context");
    return ctx_fail(c, st, api.p_cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent");
}

int cuda_ctx_ordinal(const cuda_ctx *c) { return c ? c->ordinal : -1; }
CUcontext cuda_ctx_handle(const cuda_ctx *c) { return c ? c->ctx : NULL; }
int cuda_ctx_sticky(const cuda_ctx *c) { return c ? c->sticky : 0; }

int cuda_ctx_sync(cuda_ctx *c, ks_status *st)
{
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuCtxSynchronize(), "cuCtxSynchronize");
}

int cuda_mem_info(cuda_ctx *c, size_t *free_bytes, size_t *total_bytes, ks_status *st)
{
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuMemGetInfo(free_bytes, total_bytes), "cuMemGetInfo");
}

/* ---- modules ---- */

static uint64_t rd_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The driver reads an ELF image without being told its size, so check that
 * every header and section it will follow lies within the n bytes given. */
static int check_elf(const unsigned char *b, size_t n, ks_status *st)
{
    if (n < 64)
        return ks_fail(st, KS_EINVAL, 0, "truncated cubin: %zu bytes, less than an ELF header", n);
    if (b[4] != 2 || b[5] != 1)
        return ks_fail(st, KS_EINVAL, 0, "not a 64-bit little-endian ELF cubin");
    uint64_t phoff = rd_le(b + 0x20, 8), shoff = rd_le(b + 0x28, 8);
    uint64_t phentsize = rd_le(b + 0x36, 2), phnum = rd_le(b + 0x38, 2);
    uint64_t shentsize = rd_le(b + 0x3a, 2), shnum = rd_le(b + 0x3c, 2);
    if (phnum && (phoff > n || phentsize * phnum > n - phoff))
        return ks_fail(st, KS_EINVAL, 0, "truncated cubin: program headers end past byte %zu", n);
    if (shnum && (shoff > n || shentsize * shnum > n - shoff || shentsize < 64))
        return ks_fail(st, KS_EINVAL, 0, "truncated cubin: section headers end past byte %zu", n);
    for (uint64_t i = 0; i < shnum; i++) {
        const unsigned char *sh = b + shoff + i * shentsize;
        uint64_t type = rd_le(sh + 4, 4), off = rd_le(sh + 0x18, 8), size = rd_le(sh + 0x20, 8);
        if (type == 8 /* SHT_NOBITS */ || type == 0 /* SHT_NULL */)
            continue;
        if (off > n || size > n - off)
            return ks_fail(st, KS_EINVAL, 0,
                           "truncated cubin: section %llu ends past byte %zu",
                           (unsigned long long)i, n);
    }
    return KS_OK;
}

static int check_fatbin(const unsigned char *b, size_t n, ks_status *st)
{
    /* magic u32, version u16, header size u16, payload size u64 */
    if (n < 16)
        return ks_fail(st, KS_EINVAL, 0, "truncated fatbinary: %zu bytes", n);
    uint64_t hdr = rd_le(b + 6, 2), size = rd_le(b + 8, 8);
    if (hdr > n || size > n - hdr)
        return ks_fail(st, KS_EINVAL, 0, "truncated fatbinary: it claims %llu bytes, %zu given",
                       (unsigned long long)(hdr + size), n);
    return KS_OK;
}

/* Copies the first line of s (at most max bytes) to a small buffer. */
static void first_line(const char *s, char *out, size_t max)
{
    size_t i = 0;
    while (s[i] && s[i] != '\n' && i + 1 < max) {
        out[i] = s[i];
        i++;
    }
    out[i] = '\0';
}

#define JIT_LOG_BYTES 16384

int cuda_image_check(const void *image, size_t n, int *kind, ks_status *st)
{
    if (kind)
        *kind = CUDA_IMAGE_PTX;
    if (!image || n == 0)
        return ks_fail(st, KS_EINVAL, 0, "empty module image");
    const unsigned char *b = image;
    if (n >= 4 && memcmp(b, "\x7f" "ELF", 4) == 0) {
        if (kind)
            *kind = CUDA_IMAGE_CUBIN;
        return check_elf(b, n, st);
    }
    if (n >= 4 && rd_le(b, 4) == 0xBA55ED50u) {
        if (kind)
            *kind = CUDA_IMAGE_FATBIN;
        return check_fatbin(b, n, st);
    }
    return KS_OK;
}

int cuda_module_load(cuda_ctx *c, const void *image, size_t n, CUmodule *out,
                     char *log, size_t logn, ks_status *st)
{
    *out = NULL;
    if (log && logn)
        log[0] = '\0';
    if (cuda_load(st))
        return st->code;
    int kind;
    if (cuda_image_check(image, n, &kind, st))
        return st->code;
    char *text = NULL;
    const void *img = image;
    if (kind == CUDA_IMAGE_PTX) {
        /* PTX text: the driver reads up to a NUL. */
        text = malloc(n + 1);
        if (!text)
            return ks_fail(st, KS_ENOMEM, 0, "out of host memory");
        memcpy(text, image, n);
        text[n] = '\0';
        img = text;
    }
    if (cuda_ctx_use(c, st)) {
        free(text);
        return st->code;
    }
    char *errlog = calloc(1, JIT_LOG_BYTES), *infolog = calloc(1, JIT_LOG_BYTES);
    if (!errlog || !infolog) {
        free(text);
        free(errlog);
        free(infolog);
        return ks_fail(st, KS_ENOMEM, 0, "out of host memory");
    }
    CUjit_option opts[] = {
        CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        CU_JIT_LOG_VERBOSE,
    };
    void *vals[] = {
        errlog, (void *)(uintptr_t)(JIT_LOG_BYTES - 1),
        infolog, (void *)(uintptr_t)(JIT_LOG_BYTES - 1),
        (void *)(uintptr_t)1,
    };
    CUresult r = api.p_cuModuleLoadDataEx(out, img, (unsigned)(sizeof opts / sizeof opts[0]),
                                          opts, vals);
    errlog[JIT_LOG_BYTES - 1] = '\0';
    infolog[JIT_LOG_BYTES - 1] = '\0';
    if (log && logn) {
        snprintf(log, logn, "%s%s%s", errlog, errlog[0] && infolog[0] ? "\n" : "", infolog);
    }
    int rc = KS_OK;
    if (r != CUDA_SUCCESS) {
        *out = NULL;
        char line[200];
        first_line(errlog, line, sizeof line);
        ctx_fail(c, st, r, "cuModuleLoadDataEx");
        if (line[0]) {
            size_t len = strlen(st->msg);
            snprintf(st->msg + len, sizeof st->msg - len, ": %s", line);
        }
        rc = st->code;
    }
    free(errlog);
    free(infolog);
    free(text);
    return rc;
}

int cuda_module_unload(cuda_ctx *c, CUmodule m, ks_status *st)
{
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuModuleUnload(m), "cuModuleUnload");
}

int cuda_func_get(cuda_ctx *c, CUmodule m, const char *name, CUfunction *out, ks_status *st)
{
    *out = NULL;
    if (!name)
        return ks_fail(st, KS_EINVAL, 0, "no kernel name");
    if (cuda_ctx_use(c, st))
        return st->code;
    CUresult r = api.p_cuModuleGetFunction(out, m, name);
    if (r == CUDA_ERROR_NOT_FOUND) {
        *out = NULL;
        return ks_fail(st, KS_ENOTFOUND, r, "the module has no kernel named '%s'", name);
    }
    if (r)
        *out = NULL;
    return ctx_fail(c, st, r, "cuModuleGetFunction");
}

int cuda_module_global(cuda_ctx *c, CUmodule m, const char *name, CUdeviceptr *ptr, size_t *bytes,
                       ks_status *st)
{
    *ptr = 0;
    *bytes = 0;
    if (!name)
        return ks_fail(st, KS_EINVAL, 0, "no global name");
    if (cuda_ctx_use(c, st))
        return st->code;
    CUresult r = api.p_cuModuleGetGlobal(ptr, bytes, m, name);
    if (r == CUDA_ERROR_NOT_FOUND) {
        *ptr = 0;
        *bytes = 0;
        return ks_fail(st, KS_ENOTFOUND, r, "the module has no global named '%s'", name);
    }
    return ctx_fail(c, st, r, "cuModuleGetGlobal");
}

int cuda_func_attributes(cuda_ctx *c, CUfunction f, cuda_func_attrs *a, ks_status *st)
{
    if (cuda_ctx_use(c, st))
        return st->code;
    memset(a, 0, sizeof *a);
    static const struct { CUfunction_attribute attr; size_t off; const char *what; } tab[] = {
#define F(attr, field) {attr, offsetof(cuda_func_attrs, field), #attr}
        F(CU_FUNC_ATTRIBUTE_NUM_REGS, num_regs),
        F(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, local_bytes),
        F(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, static_smem),
        F(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, const_bytes),
        F(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, max_threads),
        F(CU_FUNC_ATTRIBUTE_BINARY_VERSION, binary_version),
        F(CU_FUNC_ATTRIBUTE_PTX_VERSION, ptx_version),
        F(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, max_dynamic_smem),
        F(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, cluster_dims[0]),
        F(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, cluster_dims[1]),
        F(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, cluster_dims[2]),
#undef F
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        int v = 0;
        CUresult r = api.p_cuFuncGetAttribute(&v, tab[i].attr, f);
        if (r) {
            char what[96];
            snprintf(what, sizeof what, "cuFuncGetAttribute(%s)", tab[i].what);
            return ctx_fail(c, st, r, what);
        }
        memcpy((char *)a + tab[i].off, &v, sizeof v);
    }
    return KS_OK;
}

/* No kernel has more parameters than this: the parameter space is at most
 * 32764 bytes and every parameter takes at least one. */
#define MAX_PARAMS 32764

int cuda_func_params(cuda_ctx *c, CUfunction f, cuda_param **out, size_t *count, ks_status *st)
{
    *out = NULL;
    *count = 0;
    if (cuda_ctx_use(c, st))
        return st->code;
    if (!api.p_cuFuncGetParamInfo)
        return ks_fail(st, KS_EUNSUPPORTED, 0,
                       "the CUDA driver has no cuFuncGetParamInfo (needs CUDA 12.4 or newer)");
    cuda_param *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < MAX_PARAMS; i++) {
        size_t off = 0, size = 0;
        CUresult r = api.p_cuFuncGetParamInfo(f, i, &off, &size);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break;  /* past the last parameter */
        if (r != CUDA_SUCCESS) {
            free(v);
            if (i == 0 && (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_NOT_FOUND))
                return ks_fail(st, KS_EUNSUPPORTED, r,
                               "the driver cannot describe this kernel's parameters (%s)",
                               cuda_result_name(r));
            return ctx_fail(c, st, r, "cuFuncGetParamInfo");
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            cuda_param *nv = realloc(v, ncap * sizeof *nv);
            if (!nv) {
                free(v);
                return ks_fail(st, KS_ENOMEM, 0, "out of host memory");
            }
            v = nv;
            cap = ncap;
        }
        v[n].offset = off;
        v[n].size = size;
        n++;
    }
    *out = v;
    *count = n;
    return KS_OK;
}

int cuda_func_set_attribute(cuda_ctx *c, CUfunction f, CUfunction_attribute attr, int value,
                            ks_status *st)
{
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuFuncSetAttribute(f, attr, value), "cuFuncSetAttribute");
}

int cuda_func_set_max_dynamic_smem(cuda_ctx *c, CUfunction f, int bytes, ks_status *st)
{
    if (bytes < 0)
        return ks_fail(st, KS_EINVAL, 0, "negative dynamic shared memory size %d", bytes);
    if (cuda_ctx_use(c, st))
        return st->code;
    CUresult r = api.p_cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
    if (r) {
        ctx_fail(c, st, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
        size_t len = strlen(st->msg);
        snprintf(st->msg + len, sizeof st->msg - len, " for %d bytes", bytes);
        return st->code;
    }
    return KS_OK;
}

/* ---- launch ---- */

int cuda_launch_kernel(cuda_ctx *c, CUfunction f, const cuda_launch *l, void **params,
                       ks_status *st)
{
    static const char axis[3] = {'x', 'y', 'z'};
    int want_cluster = l->cluster[0] || l->cluster[1] || l->cluster[2];
    for (int i = 0; i < 3; i++) {
        if (l->grid[i] == 0)
            return ks_fail(st, KS_EINVAL, 0, "grid.%c is 0", axis[i]);
        if (l->block[i] == 0)
            return ks_fail(st, KS_EINVAL, 0, "block.%c is 0", axis[i]);
        if (want_cluster) {
            if (l->cluster[i] == 0)
                return ks_fail(st, KS_EINVAL, 0, "cluster.%c is 0", axis[i]);
            if (l->grid[i] % l->cluster[i])
                return ks_fail(st, KS_EINVAL, 0,
                               "grid.%c = %u is not a multiple of cluster.%c = %u",
                               axis[i], l->grid[i], axis[i], l->cluster[i]);
        }
    }
    if (cuda_ctx_use(c, st))
        return st->code;
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = l->cluster[0];
    attr.value.clusterDim.y = l->cluster[1];
    attr.value.clusterDim.z = l->cluster[2];
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = l->grid[0];
    cfg.gridDimY = l->grid[1];
    cfg.gridDimZ = l->grid[2];
    cfg.blockDimX = l->block[0];
    cfg.blockDimY = l->block[1];
    cfg.blockDimZ = l->block[2];
    cfg.sharedMemBytes = l->shared_bytes;
    cfg.hStream = l->stream;
    cfg.attrs = want_cluster ? &attr : NULL;
    cfg.numAttrs = want_cluster ? 1 : 0;
    return ctx_fail(c, st, api.p_cuLaunchKernelEx(&cfg, f, params, NULL), "cuLaunchKernelEx");
}

/* ---- device memory ---- */

int cuda_mem_alloc(cuda_ctx *c, size_t bytes, CUdeviceptr *out, ks_status *st)
{
    *out = 0;
    if (bytes == 0)
        return ks_fail(st, KS_EINVAL, 0, "cannot allocate 0 bytes");
    if (cuda_ctx_use(c, st))
        return st->code;
    CUresult r = api.p_cuMemAlloc(out, bytes);
    if (r) {
        *out = 0;
        char what[64];
        snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes);
        return ctx_fail(c, st, r, what);
    }
    return KS_OK;
}

int cuda_mem_free(cuda_ctx *c, CUdeviceptr p, ks_status *st)
{
    if (!p)
        return KS_OK;
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuMemFree(p), "cuMemFree");
}

int cuda_memcpy_htod(cuda_ctx *c, CUdeviceptr dst, const void *src, size_t n, ks_status *st)
{
    if (n == 0)
        return KS_OK;
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuMemcpyHtoD(dst, src, n), "cuMemcpyHtoD");
}

int cuda_memcpy_dtoh(cuda_ctx *c, void *dst, CUdeviceptr src, size_t n, ks_status *st)
{
    if (n == 0)
        return KS_OK;
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuMemcpyDtoH(dst, src, n), "cuMemcpyDtoH");
}

int cuda_memcpy_dtod(cuda_ctx *c, CUdeviceptr dst, CUdeviceptr src, size_t n, ks_status *st)
{
    if (n == 0)
        return KS_OK;
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuMemcpyDtoD(dst, src, n), "cuMemcpyDtoD");
}

int cuda_memset_d8(cuda_ctx *c, CUdeviceptr dst, unsigned char v, size_t n, ks_status *st)
{
    if (n == 0)
        return KS_OK;
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuMemsetD8(dst, v, n), "cuMemsetD8");
}

int cuda_memset_d32(cuda_ctx *c, CUdeviceptr dst, unsigned v, size_t count, ks_status *st)
{
    if (count == 0)
        return KS_OK;
    if (dst % 4)
        return ks_fail(st, KS_EINVAL, 0, "cuMemsetD32 needs a 4-byte aligned address");
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuMemsetD32(dst, v, count), "cuMemsetD32");
}

/* ---- streams and events ---- */

int cuda_stream_create(cuda_ctx *c, CUstream *out, ks_status *st)
{
    *out = NULL;
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuStreamCreate(out, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

int cuda_stream_destroy(cuda_ctx *c, CUstream s, ks_status *st)
{
    if (!s)
        return KS_OK;
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuStreamDestroy(s), "cuStreamDestroy");
}

int cuda_stream_sync(cuda_ctx *c, CUstream s, ks_status *st)
{
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuStreamSynchronize(s), "cuStreamSynchronize");
}

int cuda_event_create(cuda_ctx *c, CUevent *out, ks_status *st)
{
    *out = NULL;
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuEventCreate(out, CU_EVENT_DEFAULT), "cuEventCreate");
}

int cuda_event_destroy(cuda_ctx *c, CUevent e, ks_status *st)
{
    if (!e)
        return KS_OK;
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuEventDestroy(e), "cuEventDestroy");
}

int cuda_event_record(cuda_ctx *c, CUevent e, CUstream s, ks_status *st)
{
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuEventRecord(e, s), "cuEventRecord");
}

int cuda_event_sync(cuda_ctx *c, CUevent e, ks_status *st)
{
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuEventSynchronize(e), "cuEventSynchronize");
}

int cuda_event_elapsed(cuda_ctx *c, CUevent start, CUevent end, float *ms, ks_status *st)
{
    if (cuda_ctx_use(c, st))
        return st->code;
    return ctx_fail(c, st, api.p_cuEventElapsedTime(ms, start, end), "cuEventElapsedTime");
}
