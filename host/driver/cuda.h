/*
 * cuda.h: the CUDA driver layer. Loads libcuda at run time and wraps the
 * driver calls klab needs: devices, the primary context, modules, functions,
 * launches, device memory, streams and events.
 *
 * libcuda is never linked. The first call that needs the driver runs one
 * thread-safe loader: dlopen("libcuda.so.1"), then cuGetProcAddress_v2 (or
 * the older cuGetProcAddress) for every entry point at the toolkit's
 * CUDA_VERSION, then cuInit(0) and a device count. When any step fails,
 * every function here fails with KS_ENODRIVER and the same message
 * ("no CUDA driver found: <dlerror>", "no CUDA device found: ..."), so the
 * binary starts and runs its non-GPU stages on any machine.
 *
 * KLAB_LIBCUDA, when set and non-empty, names the library to open instead of
 * libcuda.so.1 (an unusual install, or a test).
 *
 * Every function returns a ks_code and fills st on failure. A failed driver
 * call gives KS_ECUDA (KS_ENOMEM for CUDA_ERROR_OUT_OF_MEMORY) with
 * st->sub = the CUresult and a message "<call>: CUDA_ERROR_X (n): text".
 * Functions that take a cuda_ctx make it current on the calling thread first.
 *
 * Caution: the loader calls cuInit. A supervisor process that forks workers
 * should not call anything here before it forks (fork after cuInit is not
 * supported by the driver); fork+exec is fine.
 */
#ifndef KLAB_HOST_CUDA_H
#define KLAB_HOST_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#ifndef CUDA_VERSION
/* <cuda.h> found this file again: host/ came before $(CUDA_HOME)/include on
 * the include path. Put CUDA's include directory first (the Makefile does). */
#error "host/driver/cuda.h: <cuda.h> must resolve to the CUDA toolkit's header"
#endif

#include "base/status.h"

/* ---- driver and devices ---- */

/* 1 when the driver loaded, initialised and sees at least one device; else 0
 * with the reason (the KS_ENODRIVER message) copied into reason (n bytes,
 * may be NULL/0). Thread-safe; loads the driver on first use. */
int cuda_available(char *reason, size_t n);

/* Ensures the driver is loaded; KS_OK or KS_ENODRIVER with the reason. */
int cuda_load(ks_status *st);

/* Resolves any other driver entry point through cuGetProcAddress, for the
 * version given (pass CUDA_VERSION unless an older ABI is wanted). Fails with
 * KS_ENOTFOUND when the driver lacks it. For host modules that need a driver
 * call this file does not wrap (cuTensorMapEncodeTiled, ...). */
int cuda_proc(const char *name, int version, void **fn, ks_status *st);

/* cuDriverGetVersion (e.g. 13000 for CUDA 13.0). */
int cuda_driver_version(int *v, ks_status *st);

/* cuDeviceGetCount. */
int cuda_device_count(int *n, ks_status *st);

typedef struct cuda_props {
    int ordinal;
    char name[256];
    int major, minor;           /* compute capability */
    char arch[16];              /* "sm_90a", "sm_100a", "sm_89", ... */
    int sm_count;
    int l2_bytes;
    int smem_per_block_optin;   /* max shared memory per block, opt-in */
    int smem_per_sm;
    int max_threads_per_block;
    int warp_size;
    int regs_per_sm;
    int clock_khz;              /* SM clock (CU_DEVICE_ATTRIBUTE_CLOCK_RATE) */
    int mem_clock_khz;          /* memory clock */
    int bus_width_bits;
    size_t total_mem;           /* bytes */
    unsigned char uuid[16];
    char uuid_str[48];          /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    char pci_bus_id[32];        /* "0000:19:00.0" */
    int ecc;                    /* 1 when ECC is enabled */
    int compute_mode;           /* CUcomputemode */
    int cluster_launch;         /* 1 when thread-block clusters are supported */
} cuda_props;

/* Describes device `ordinal`. KS_EINVAL when ordinal is out of range. */
int cuda_device_props(int ordinal, cuda_props *p, ks_status *st);

/* The compile target for a compute capability: "sm_90a" for 9.0, "sm_100a"
 * for 10.0 (their special instructions need the a-suffixed target),
 * "sm_<major><minor>" otherwise. Always NUL-terminates buf (n > 0). */
void cuda_arch_name(int major, int minor, char *buf, size_t n);

/* ---- CUresult helpers (work without a driver) ---- */

/* 1 when r leaves the context unusable (illegal address, misaligned address,
 * launch failed, illegal instruction, hardware stack error, assert, ...):
 * every later call fails and the process must be restarted. */
int cuda_result_is_sticky(int r);

/* "CUDA_ERROR_ILLEGAL_ADDRESS", from the driver when loaded, else from a
 * built-in table; "CUDA_ERROR_<n>" when unknown. Never NULL. */
const char *cuda_result_name(int r);

/* The driver's description of r, or "" when unknown. Never NULL. */
const char *cuda_result_string(int r);

/* Fills st for a failed call `what` returning r (KS_ECUDA, or KS_ENOMEM for
 * out of memory) and returns the code; KS_OK when r is CUDA_SUCCESS. */
int cuda_fail(ks_status *st, int r, const char *what);

/* ---- context ---- */

typedef struct cuda_ctx cuda_ctx;

/* Retains the primary context of device `ordinal` and makes it current.
 * *out is NULL on failure. */
int cuda_ctx_open(int ordinal, cuda_ctx **out, ks_status *st);

/* Releases the primary context and frees c. NULL is a no-op. The handle is
 * gone even when the driver call fails (after a sticky error, say). */
int cuda_ctx_close(cuda_ctx *c, ks_status *st);

/* Makes c current on the calling thread. */
int cuda_ctx_use(cuda_ctx *c, ks_status *st);

int cuda_ctx_ordinal(const cuda_ctx *c);
CUcontext cuda_ctx_handle(const cuda_ctx *c);

/* The first sticky CUresult seen through c (0 if none): after one, the
 * process must be restarted to use the GPU again. */
int cuda_ctx_sticky(const cuda_ctx *c);

/* cuCtxSynchronize on c. */
int cuda_ctx_sync(cuda_ctx *c, ks_status *st);

/* cuMemGetInfo. */
int cuda_mem_info(cuda_ctx *c, size_t *free_bytes, size_t *total_bytes, ks_status *st);

/* ---- modules and functions ---- */

enum { CUDA_IMAGE_PTX = 0, CUDA_IMAGE_CUBIN = 1, CUDA_IMAGE_FATBIN = 2 };

/* Classifies a module image (ELF cubin, fatbinary, else PTX text) into *kind
 * (may be NULL) and checks, without a driver, that a cubin's headers and
 * sections or a fatbinary's payload lie within the n bytes given (the driver
 * is never told the size). KS_EINVAL for an empty or truncated image. */
int cuda_image_check(const void *image, size_t n, int *kind, ks_status *st);

/* Loads a module from an image: a cubin (ELF, checked to lie within n
 * bytes), a fatbinary, or PTX text (need not be NUL-terminated). The driver's
 * error and info logs go to log (n bytes, may be NULL/0), NUL-terminated,
 * error log first. */
int cuda_module_load(cuda_ctx *c, const void *image, size_t n, CUmodule *out,
                     char *log, size_t logn, ks_status *st);

int cuda_module_unload(cuda_ctx *c, CUmodule m, ks_status *st);

/* cuModuleGetGlobal: the address and size of a module global (a
 * __device__ variable); KS_ENOTFOUND when the module has none by that name. */
int cuda_module_global(cuda_ctx *c, CUmodule m, const char *name, CUdeviceptr *ptr, size_t *bytes,
                       ks_status *st);

/* cuModuleGetFunction; KS_ENOTFOUND when the module has no such kernel. */
int cuda_func_get(cuda_ctx *c, CUmodule m, const char *name, CUfunction *out, ks_status *st);

typedef struct cuda_func_attrs {
    int num_regs;
    int local_bytes;         /* per thread */
    int static_smem;
    int const_bytes;
    int max_threads;         /* max threads per block for this kernel */
    int binary_version;      /* e.g. 90 for sm_90 */
    int ptx_version;
    int max_dynamic_smem;
    int cluster_dims[3];     /* required cluster dims, 0 when not set */
} cuda_func_attrs;

int cuda_func_attributes(cuda_ctx *c, CUfunction f, cuda_func_attrs *a, ks_status *st);

typedef struct cuda_param {
    size_t offset;
    size_t size;
} cuda_param;

/* The kernel's parameter layout (cuFuncGetParamInfo). On success *out is a
 * malloc'd array of *count entries (NULL when 0) that the caller frees.
 * KS_EUNSUPPORTED when the driver cannot tell (no cuFuncGetParamInfo, or a
 * kernel without parameter information). */
int cuda_func_params(cuda_ctx *c, CUfunction f, cuda_param **out, size_t *count, ks_status *st);

/* cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). */
int cuda_func_set_max_dynamic_smem(cuda_ctx *c, CUfunction f, int bytes, ks_status *st);

/* cuFuncSetAttribute for any attribute. */
int cuda_func_set_attribute(cuda_ctx *c, CUfunction f, CUfunction_attribute attr, int value,
                            ks_status *st);

/* ---- launch ---- */

typedef struct cuda_launch {
    unsigned grid[3];
    unsigned block[3];
    unsigned cluster[3];     /* all 0: no cluster attribute */
    unsigned shared_bytes;   /* dynamic shared memory */
    CUstream stream;         /* NULL: the legacy default stream */
} cuda_launch;

/* cuLaunchKernelEx with params as kernelParams (one pointer per parameter).
 * Grid, block and cluster dims must be >= 1 (cluster all 0 for none), and the
 * grid divisible by the cluster (KS_EINVAL otherwise). */
int cuda_launch_kernel(cuda_ctx *c, CUfunction f, const cuda_launch *l, void **params,
                       ks_status *st);

/* ---- device memory ---- */

int cuda_mem_alloc(cuda_ctx *c, size_t bytes, CUdeviceptr *out, ks_status *st);
int cuda_mem_free(cuda_ctx *c, CUdeviceptr p, ks_status *st);
int cuda_memcpy_htod(cuda_ctx *c, CUdeviceptr dst, const void *src, size_t n, ks_status *st);
int cuda_memcpy_dtoh(cuda_ctx *c, void *dst, CUdeviceptr src, size_t n, ks_status *st);
int cuda_memcpy_dtod(cuda_ctx *c, CUdeviceptr dst, CUdeviceptr src, size_t n, ks_status *st);
int cuda_memset_d8(cuda_ctx *c, CUdeviceptr dst, unsigned char v, size_t n, ks_status *st);
/* count is in 32-bit words; dst must be 4-byte aligned. */
int cuda_memset_d32(cuda_ctx *c, CUdeviceptr dst, unsigned v, size_t count, ks_status *st);

/* ---- streams and events ---- */

/* A non-blocking stream (does not synchronise with the legacy stream). */
int cuda_stream_create(cuda_ctx *c, CUstream *out, ks_status *st);
int cuda_stream_destroy(cuda_ctx *c, CUstream s, ks_status *st);
int cuda_stream_sync(cuda_ctx *c, CUstream s, ks_status *st);

/* An event with timing enabled (CU_EVENT_DEFAULT). */
int cuda_event_create(cuda_ctx *c, CUevent *out, ks_status *st);
int cuda_event_destroy(cuda_ctx *c, CUevent e, ks_status *st);
int cuda_event_record(cuda_ctx *c, CUevent e, CUstream s, ks_status *st);
int cuda_event_sync(cuda_ctx *c, CUevent e, ks_status *st);
/* Milliseconds between two recorded, completed events. */
int cuda_event_elapsed(cuda_ctx *c, CUevent start, CUevent end, float *ms, ks_status *st);

#endif
