/*
 * cupti.c: the one loader of libcupti (see cupti.h).
 */
#include "measure/cupti.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cupti.h>

/* CUPTI opens libnvperf_host/target itself, by soname. Loading them first
 * from CUDA_HOME (or KLAB_NVPERF_*) lets it find them on installs where its
 * own search would not; failures here are ignored (CUPTI may still find
 * them). */
static const char *const nvperf_host_names[] = {"libnvperf_host.so", NULL};
static const char *const nvperf_target_names[] = {"libnvperf_target.so", NULL};
static const dynlib_desc dynlib_nvperf_host = {"nvperf_host", "KLAB_NVPERF_HOST", nvperf_host_names, NULL};
static const dynlib_desc dynlib_nvperf_target = {"nvperf_target", "KLAB_NVPERF_TARGET", nvperf_target_names,
                                                 NULL};

/* libcupti opens libnvperf_host.so with RTLD_DEEPBIND, which
 * AddressSanitizer refuses by aborting the process. Under ASan (the SAN=1
 * build) the profiler APIs are therefore reported as unsupported. */
#if defined(__SANITIZE_ADDRESS__)
#define KLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KLAB_ASAN 1
#endif
#endif

int cupti_profiler_blocked(ks_status *st)
{
#ifdef KLAB_ASAN
    return ks_fail(st, KS_EUNSUPPORTED, 0,
                   "CUPTI profiling is disabled in the AddressSanitizer build (libcupti loads "
                   "libnvperf_host with RTLD_DEEPBIND, which ASan aborts on)");
#else
    (void)st;
    return KS_OK;
#endif
}

static pthread_mutex_t result_mu = PTHREAD_MUTEX_INITIALIZER;
static CUptiResult (*result_string)(CUptiResult, const char **);

const dynlib *cupti_lib(int profiler, ks_status *st)
{
    if (profiler && cupti_profiler_blocked(st))
        return NULL;
    const dynlib *lib = dynlib_get(&dynlib_cupti, st);
    if (!lib)
        return NULL;
    if (profiler) {
        ks_status ignored;
        ks_clear(&ignored);
        (void)dynlib_get(&dynlib_nvperf_host, &ignored);
        (void)dynlib_get(&dynlib_nvperf_target, &ignored);
    }
    pthread_mutex_lock(&result_mu);
    if (!result_string) {
        ks_status ignored;
        ks_clear(&ignored);
        void *p = NULL;
        if (dynlib_sym(lib, "cuptiGetResultString", &p, &ignored) == KS_OK)
            memcpy(&result_string, &p, sizeof p);
    }
    pthread_mutex_unlock(&result_mu);
    return lib;
}

int cupti_bind(const dynlib_symbol *syms, size_t n, int profiler, ks_status *st)
{
    const dynlib *lib = cupti_lib(profiler, st);
    if (!lib)
        return st->code;
    return dynlib_bind(lib, syms, n, st);
}

static const char *const result_names[] = {
    [CUPTI_SUCCESS] = "CUPTI_SUCCESS",
    [CUPTI_ERROR_INVALID_PARAMETER] = "CUPTI_ERROR_INVALID_PARAMETER",
    [CUPTI_ERROR_INVALID_DEVICE] = "CUPTI_ERROR_INVALID_DEVICE",
    [CUPTI_ERROR_INVALID_CONTEXT] = "CUPTI_ERROR_INVALID_CONTEXT",
    [CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID] = "CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID",
    [CUPTI_ERROR_INVALID_EVENT_ID] = "CUPTI_ERROR_INVALID_EVENT_ID",
    [CUPTI_ERROR_INVALID_EVENT_NAME] = "CUPTI_ERROR_INVALID_EVENT_NAME",
    [CUPTI_ERROR_INVALID_OPERATION] = "CUPTI_ERROR_INVALID_OPERATION",
    [CUPTI_ERROR_OUT_OF_MEMORY] = "CUPTI_ERROR_OUT_OF_MEMORY",
    [CUPTI_ERROR_HARDWARE] = "CUPTI_ERROR_HARDWARE",
    [CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT] = "CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT",
    [CUPTI_ERROR_API_NOT_IMPLEMENTED] = "CUPTI_ERROR_API_NOT_IMPLEMENTED",
    [CUPTI_ERROR_MAX_LIMIT_REACHED] = "CUPTI_ERROR_MAX_LIMIT_REACHED",
    [CUPTI_ERROR_NOT_READY] = "CUPTI_ERROR_NOT_READY",
    [CUPTI_ERROR_NOT_COMPATIBLE] = "CUPTI_ERROR_NOT_COMPATIBLE",
    [CUPTI_ERROR_NOT_INITIALIZED] = "CUPTI_ERROR_NOT_INITIALIZED",
    [CUPTI_ERROR_INVALID_METRIC_ID] = "CUPTI_ERROR_INVALID_METRIC_ID",
    [CUPTI_ERROR_INVALID_METRIC_NAME] = "CUPTI_ERROR_INVALID_METRIC_NAME",
    [CUPTI_ERROR_QUEUE_EMPTY] = "CUPTI_ERROR_QUEUE_EMPTY",
    [CUPTI_ERROR_INVALID_HANDLE] = "CUPTI_ERROR_INVALID_HANDLE",
    [CUPTI_ERROR_INVALID_STREAM] = "CUPTI_ERROR_INVALID_STREAM",
    [CUPTI_ERROR_INVALID_KIND] = "CUPTI_ERROR_INVALID_KIND",
    [CUPTI_ERROR_INVALID_EVENT_VALUE] = "CUPTI_ERROR_INVALID_EVENT_VALUE",
    [CUPTI_ERROR_DISABLED] = "CUPTI_ERROR_DISABLED",
    [CUPTI_ERROR_INVALID_MODULE] = "CUPTI_ERROR_INVALID_MODULE",
    [CUPTI_ERROR_INVALID_METRIC_VALUE] = "CUPTI_ERROR_INVALID_METRIC_VALUE",
    [CUPTI_ERROR_HARDWARE_BUSY] = "CUPTI_ERROR_HARDWARE_BUSY",
    [CUPTI_ERROR_NOT_SUPPORTED] = "CUPTI_ERROR_NOT_SUPPORTED",
    [CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED] = "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED",
    [CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE] =
        "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE",
    [CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS] =
        "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS",
    [CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED] = "CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED",
    [CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED] = "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED",
    [CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE] = "CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE",
    [CUPTI_ERROR_INSUFFICIENT_PRIVILEGES] = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
    [CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED] = "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED",
    [CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE] = "CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE",
    [CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED] = "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED",
    [CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED] =
        "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
    [CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES] =
        "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES",
    [CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED] =
        "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED",
    [CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED] = "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED",
    [CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED] = "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED",
    [CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED] = "CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED",
    [CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED] = "CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED",
    [CUPTI_ERROR_INVALID_CHIP_NAME] = "CUPTI_ERROR_INVALID_CHIP_NAME",
};

const char *cupti_result_name(int r)
{
    static char buf[32];
    if (r == CUPTI_ERROR_UNKNOWN)
        return "CUPTI_ERROR_UNKNOWN";
    if (r >= 0 && (size_t)r < sizeof result_names / sizeof result_names[0] && result_names[r])
        return result_names[r];
    snprintf(buf, sizeof buf, "CUPTI_ERROR_%d", r);
    return buf;
}

int cupti_fail_text(ks_status *st, int r, const char *what, const char *text)
{
    const char *name = cupti_result_name(r);
    int code = r == CUPTI_ERROR_OUT_OF_MEMORY ? KS_ENOMEM : KS_EUNSUPPORTED;
    /* CUPTI's "result string" is often the name itself; print it once. */
    if (text && *text && strcmp(text, name) != 0)
        return ks_fail(st, code, r, "%s: %s (%d): %s", what, name, r, text);
    return ks_fail(st, code, r, "%s: %s (%d)", what, name, r);
}

int cupti_fail(ks_status *st, int r, const char *what)
{
    const char *text = NULL;
    pthread_mutex_lock(&result_mu);
    CUptiResult (*f)(CUptiResult, const char **) = result_string;
    pthread_mutex_unlock(&result_mu);
    if (f && f((CUptiResult)r, &text) != CUPTI_SUCCESS)
        text = NULL;
    return cupti_fail_text(st, r, what, text);
}
