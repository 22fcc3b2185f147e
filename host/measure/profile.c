/*
 * profile.c: the CUPTI Range Profiler through dlopen. See profile.h.
 *
 * cupti_profiler_host.h includes the C++ header <string>, so it cannot be
 * included from C. The few host-API parameter blocks used here are declared
 * below, field for field in the header's order (CUPTI checks structSize,
 * computed the same way as the header's *_STRUCT_SIZE macros). The target
 * headers (cupti_profiler_target.h, cupti_range_profiler.h, cupti_target.h)
 * are C-clean and used as they are.
 */
#if defined(__LP64__) && !defined(CUPTILP64)
#define CUPTILP64 1
#endif

#include "measure/profile.h"

#include "base/clock.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_result.h>
#include <cupti_target.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>

#include "measure/cupti_act.h"
#include "driver/dynlib.h"

/* ---- the metric table ----
 *
 * Roles (klab.eval.profile adds up the values of a role; "pct.*" roles take the
 * largest):
 *   inst.wgmma       warp-level wgmma instructions (HGMMA/IGMMA/QGMMA/BGMMA)
 *   inst.tma         TMA instructions (loads: UTMALDG, UBLKCP.S.G; stores/reductions)
 *   inst.tensor_pipe warp instructions on the tensor pipe's HMMA sub-pipe (GH100: HMMA, HGMMA
 *                    and the HFMA2.MMA that the compiler places there for plain code)
 *   inst.tensor_hfma2 the HFMA2 among them (not tensor-core work)
 *   inst.imma, inst.dmma  IMMA and DMMA warp instructions (GH100)
 *   inst.tc          tcgen05 pipe instructions (UTCMMA, UTCBAR, UTCCP, UTCSHIFT)
 *   inst.utcmma      UTC*MMA instructions (SASS-patched count)
 *   inst.tmem        tensor-memory instructions (LDT/LDTM/STT/STTM)
 *   inst.total       all warp instructions
 *   flops.gmma       tensor FLOPs through HGMMA/IGMMA (wgmma)
 *   flops.fp8        tensor FLOPs with fp8 sources (GH100 does not split them by path)
 *   flops.hmma       tensor FLOPs through HMMA/IMMA (mma.sync)
 *   flops.utc        tensor FLOPs through UTC*MMA (tcgen05.mma)
 * A FLOP row also names its operands' type (src: bf16, fp16, tf32, int8,
 * fp8 (on GB100 the fp4/fp6/fp8 path), fp4), so that a task can require
 * the tensor-core path of its own types: an fp8 GEMM done by bf16 wgmma
 * after a conversion is not the fp8 path.
 *   ops.ffma, ops.fadd, ops.fmul, ops.hfma, ops.hadd, ops.hmul, ops.dfma,
 *   ops.dadd, ops.dmul   thread-level arithmetic instructions executed on
 *                    the SIMT pipes (with predicate on), for the FLOPs
 *                    done off the tensor cores
 *   time.ns          duration of the profiled range (slowed by profiling: not a timing)
 *   pct.sm, pct.mem, pct.dram, pct.occupancy, pct.tensor   percent of peak
 *   bytes.dram_read, bytes.dram_write
 *   rate.sm_hz       SM clock during the profiled run
 *   cycles.elapsed   SM cycles the range lasted (launch gaps and the closing
 *                    synchronisation included)
 *   cycles.active    cycles of the busiest SM: the kernels' own span, which
 *                    klab.eval.profile uses to turn "of elapsed" percentages of
 *                    the range into percentages of the kernels' time
 *
 * verified = 1 only for what was checked on an H200 (cuda.md section 1).
 * Every name below was checked to exist in CUPTI 13.0's offline tables for
 * its chip (tests/lua/profile_test.lua checks it again on each machine).
 */
static const profile_metric TABLE[] = {
    /* Hopper: H100, H200 */
    {"GH100", "sm__inst_executed_pipe_tensor_op_gmma.sum", "inst.wgmma", 1, NULL},
    {"GH100", "smsp__inst_executed_op_tma_ld.sum", "inst.tma", 1, NULL},
    {"GH100", "smsp__inst_executed_op_tma_st.sum", "inst.tma", 0, NULL},
    {"GH100", "sm__inst_executed_pipe_tensor_op_hmma.sum", "inst.tensor_pipe", 0, NULL},
    {"GH100", "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum", "inst.tensor_hfma2", 0, NULL},
    {"GH100", "sm__inst_executed_pipe_tensor_op_imma.sum", "inst.imma", 0, NULL},
    {"GH100", "sm__inst_executed_pipe_tensor_op_dmma.sum", "inst.dmma", 0, NULL},
    {"GH100", "sm__inst_executed.sum", "inst.total", 0, NULL},
    {"GH100", "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum", "flops.gmma", 1, "bf16"},
    {"GH100", "sm__ops_path_tensor_op_hgmma_src_fp16.sum", "flops.gmma", 0, "fp16"},
    {"GH100", "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum", "flops.gmma", 0, "tf32"},
    {"GH100", "sm__ops_path_tensor_op_igmma_src_int8.sum", "flops.gmma", 0, "int8"},
    {"GH100", "sm__ops_path_tensor_src_fp8.sum", "flops.fp8", 0, "fp8"},
    {"GH100", "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32.sum", "flops.hmma", 0, "bf16"},
    {"GH100", "sm__ops_path_tensor_op_hmma_src_fp16.sum", "flops.hmma", 0, "fp16"},
    {"GH100", "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32.sum", "flops.hmma", 0, "tf32"},
    {"GH100", "sm__ops_path_tensor_op_imma_src_int8.sum", "flops.hmma", 0, "int8"},
    {"GH100", "gpu__time_duration.sum", "time.ns", 0, NULL},
    {"GH100", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "pct.sm", 0, NULL},
    {"GH100", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "pct.mem", 0, NULL},
    {"GH100", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "pct.dram", 0, NULL},
    {"GH100", "sm__warps_active.avg.pct_of_peak_sustained_active", "pct.occupancy", 0, NULL},
    {"GH100", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "pct.tensor", 0, NULL},
    {"GH100", "dram__bytes_read.sum", "bytes.dram_read", 0, NULL},
    {"GH100", "dram__bytes_write.sum", "bytes.dram_write", 0, NULL},
    {"GH100", "sm__cycles_elapsed.avg.per_second", "rate.sm_hz", 0, NULL},
    {"GH100", "sm__cycles_elapsed.max", "cycles.elapsed", 0, NULL},
    {"GH100", "sm__cycles_active.max", "cycles.active", 0, NULL},
    {"GH100", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "ops.ffma", 0, NULL},
    {"GH100", "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", "ops.fadd", 0, NULL},
    {"GH100", "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", "ops.fmul", 0, NULL},
    {"GH100", "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", "ops.hfma", 0, NULL},
    {"GH100", "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", "ops.hadd", 0, NULL},
    {"GH100", "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum", "ops.hmul", 0, NULL},
    {"GH100", "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", "ops.dfma", 0, NULL},
    {"GH100", "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", "ops.dadd", 0, NULL},
    {"GH100", "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", "ops.dmul", 0, NULL},

    /* Blackwell: B200 (GB100). Names from CUPTI 13.0's offline tables only:
     * not yet run on a B200. */
    {"GB100", "sm__inst_executed_pipe_tc.sum", "inst.tc", 0, NULL},
    {"GB100", "smsp__sass_inst_executed_op_utcmma.sum", "inst.utcmma", 0, NULL},
    {"GB100", "sm__inst_executed_pipe_tmem.sum", "inst.tmem", 0, NULL},
    {"GB100", "smsp__inst_executed_op_tma_ld.sum", "inst.tma", 0, NULL},
    {"GB100", "smsp__inst_executed_op_tma_st.sum", "inst.tma", 0, NULL},
    {"GB100", "sm__inst_executed.sum", "inst.total", 0, NULL},
    {"GB100", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "ops.ffma", 0, NULL},
    {"GB100", "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", "ops.fadd", 0, NULL},
    {"GB100", "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", "ops.fmul", 0, NULL},
    {"GB100", "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", "ops.hfma", 0, NULL},
    {"GB100", "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", "ops.hadd", 0, NULL},
    {"GB100", "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum", "ops.hmul", 0, NULL},
    {"GB100", "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", "ops.dfma", 0, NULL},
    {"GB100", "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", "ops.dadd", 0, NULL},
    {"GB100", "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", "ops.dmul", 0, NULL},
    {"GB100", "sm__ops_path_tensor_op_utchmma_src_bf16_dst_fp32.sum", "flops.utc", 0, "bf16"},
    {"GB100", "sm__ops_path_tensor_op_utchmma_src_fp16_dst_fp32.sum", "flops.utc", 0, "fp16"},
    {"GB100", "sm__ops_path_tensor_op_utchmma_src_fp16_dst_fp16.sum", "flops.utc", 0, "fp16"},
    {"GB100", "sm__ops_path_tensor_op_utchmma_src_tf32_dst_fp32.sum", "flops.utc", 0, "tf32"},
    {"GB100", "sm__ops_path_tensor_op_utcqmma_src_fp4_fp6_fp8_dst_fp32.sum", "flops.utc", 0, "fp8"},
    {"GB100", "sm__ops_path_tensor_op_utcqmma_src_fp4_fp6_fp8_dst_fp16.sum", "flops.utc", 0, "fp8"},
    {"GB100", "sm__ops_path_tensor_op_utcomma_src_fp4_dst_fp32.sum", "flops.utc", 0, "fp4"},
    {"GB100", "sm__ops_path_tensor_op_utcimma_src_int8.sum", "flops.utc", 0, "int8"},
    {"GB100", "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32.sum", "flops.hmma", 0, "bf16"},
    {"GB100", "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum", "flops.hmma", 0, "fp16"},
    {"GB100", "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16.sum", "flops.hmma", 0, "fp16"},
    {"GB100", "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32.sum", "flops.hmma", 0, "tf32"},
    {"GB100", "sm__ops_path_tensor_op_imma_src_int8.sum", "flops.hmma", 0, "int8"},
    {"GB100", "gpu__time_duration.sum", "time.ns", 0, NULL},
    {"GB100", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "pct.sm", 0, NULL},
    {"GB100", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "pct.mem", 0, NULL},
    {"GB100", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "pct.dram", 0, NULL},
    {"GB100", "sm__warps_active.avg.pct_of_peak_sustained_active", "pct.occupancy", 0, NULL},
    {"GB100", "sm__pipe_tc_cycles_active.avg.pct_of_peak_sustained_active", "pct.tensor", 0, NULL},
    {"GB100", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "pct.tensor", 0, NULL},
    {"GB100", "dram__bytes_read.sum", "bytes.dram_read", 0, NULL},
    {"GB100", "dram__bytes_write.sum", "bytes.dram_write", 0, NULL},
    {"GB100", "sm__cycles_elapsed.avg.per_second", "rate.sm_hz", 0, NULL},
    {"GB100", "sm__cycles_elapsed.max", "cycles.elapsed", 0, NULL},
    {"GB100", "sm__cycles_active.max", "cycles.active", 0, NULL},
};

#define TABLE_N (sizeof TABLE / sizeof TABLE[0])

const profile_metric *profile_metric_table(size_t *n)
{
    *n = TABLE_N;
    return TABLE;
}

const char *profile_table_chip(const char *chip)
{
    if (!chip)
        return NULL;
    if (strcmp(chip, "GH100") == 0)
        return "GH100";
    /* The data-centre Blackwell chips share GB100's tables (same SM). The
     * consumer parts (GB20x) have no tcgen05 and no list here. */
    if (strcmp(chip, "GB100") == 0 || strcmp(chip, "GB102") == 0 || strcmp(chip, "GB110") == 0)
        return "GB100";
    return NULL;
}

const profile_metric *profile_metrics_for(const char *chip, size_t *n)
{
    const char *t = profile_table_chip(chip);
    *n = 0;
    if (!t)
        return NULL;
    const profile_metric *first = NULL;
    for (size_t i = 0; i < TABLE_N; i++) {
        if (strcmp(TABLE[i].chip, t) == 0) {
            if (!first)
                first = &TABLE[i];
            (*n)++;
        } else if (first) {
            break; /* a chip's rows are contiguous */
        }
    }
    return first;
}

/* ---- profiler host API, declared here (see the top of the file) ---- */

typedef struct ph_object ph_object;

#define PH_SIZE(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))
#define PH_RANGE_PROFILER 0 /* CUPTI_PROFILER_TYPE_RANGE_PROFILER */

typedef struct {
    size_t structSize;
    void *pPriv;
    int profilerType;                   /* CUpti_ProfilerType */
    const char *pChipName;
    const uint8_t *pCounterAvailabilityImage;
    ph_object *pHostObject;             /* out */
} ph_init_params;

typedef struct {
    size_t structSize;
    void *pPriv;
    ph_object *pHostObject;
} ph_deinit_params;

typedef struct {
    size_t structSize;
    void *pPriv;
    size_t numChips;                    /* out */
    const char *const *ppChipNames;     /* out */
} ph_chips_params;

typedef struct {
    size_t structSize;
    void *pPriv;
    ph_object *pHostObject;
    const char *pMetricName;
    const char *pDescription;           /* out */
    const char *pHwUnit;                /* out */
    const char *pDimUnit;               /* out */
    int metricType;                     /* out: CUpti_MetricType */
} ph_props_params;

typedef struct {
    size_t structSize;
    void *pPriv;
    ph_object *pHostObject;
    const char **ppMetricNames;
    size_t numMetrics;
} ph_add_params;

typedef struct {
    size_t structSize;
    void *pPriv;
    ph_object *pHostObject;
    size_t configImageSize;             /* out */
} ph_cfgsize_params;

typedef struct {
    size_t structSize;
    void *pPriv;
    ph_object *pHostObject;
    size_t configImageSize;
    uint8_t *pConfigImage;              /* out */
} ph_cfg_params;

typedef struct {
    size_t structSize;
    void *pPriv;
    size_t configImageSize;
    uint8_t *pConfigImage;
    size_t numOfPasses;                 /* out */
} ph_passes_params;

typedef struct {
    size_t structSize;
    void *pPriv;
    ph_object *pHostObject;
    const uint8_t *pCounterDataImage;
    size_t counterDataImageSize;
    size_t rangeIndex;
    const char **ppMetricNames;
    size_t numMetrics;
    double *pMetricValues;              /* out */
} ph_eval_params;

/* ---- entry points ---- */

typedef struct prof_api {
    CUptiResult (*ProfilerInitialize)(CUpti_Profiler_Initialize_Params *);
    CUptiResult (*DeviceGetChipName)(CUpti_Device_GetChipName_Params *);
    CUptiResult (*GetCounterAvailability)(CUpti_Profiler_GetCounterAvailability_Params *);
    CUptiResult (*DeviceSupported)(CUpti_Profiler_DeviceSupported_Params *);
    CUptiResult (*HostInitialize)(ph_init_params *);
    CUptiResult (*HostDeinitialize)(ph_deinit_params *);
    CUptiResult (*HostGetSupportedChips)(ph_chips_params *);
    CUptiResult (*HostGetMetricProperties)(ph_props_params *);
    CUptiResult (*HostConfigAddMetrics)(ph_add_params *);
    CUptiResult (*HostGetConfigImageSize)(ph_cfgsize_params *);
    CUptiResult (*HostGetConfigImage)(ph_cfg_params *);
    CUptiResult (*HostGetNumOfPasses)(ph_passes_params *);
    CUptiResult (*HostEvaluateToGpuValues)(ph_eval_params *);
    CUptiResult (*RPEnable)(CUpti_RangeProfiler_Enable_Params *);
    CUptiResult (*RPDisable)(CUpti_RangeProfiler_Disable_Params *);
    CUptiResult (*RPSetConfig)(CUpti_RangeProfiler_SetConfig_Params *);
    CUptiResult (*RPStart)(CUpti_RangeProfiler_Start_Params *);
    CUptiResult (*RPStop)(CUpti_RangeProfiler_Stop_Params *);
    CUptiResult (*RPPushRange)(CUpti_RangeProfiler_PushRange_Params *);
    CUptiResult (*RPPopRange)(CUpti_RangeProfiler_PopRange_Params *);
    CUptiResult (*RPDecodeData)(CUpti_RangeProfiler_DecodeData_Params *);
    CUptiResult (*RPGetCounterDataSize)(CUpti_RangeProfiler_GetCounterDataSize_Params *);
    CUptiResult (*RPCounterDataImageInitialize)(CUpti_RangeProfiler_CounterDataImage_Initialize_Params *);
    CUptiResult (*RPGetCounterDataInfo)(CUpti_RangeProfiler_GetCounterDataInfo_Params *);
} prof_api;

static prof_api api;
static int api_loaded;
static int profiler_initialized;
static int measuring;
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;

int profile_load(ks_status *st)
{
    if (cupti_profiler_blocked(st))
        return st->code;
    int rc = KS_OK;
    pthread_mutex_lock(&load_mu);
    if (api_loaded)
        goto out;
    prof_api a;
    memset(&a, 0, sizeof a);
    const dynlib_symbol syms[] = {
        {"cuptiProfilerInitialize", (void **)&a.ProfilerInitialize, 0},
        {"cuptiDeviceGetChipName", (void **)&a.DeviceGetChipName, 0},
        {"cuptiProfilerGetCounterAvailability", (void **)&a.GetCounterAvailability, 0},
        {"cuptiProfilerDeviceSupported", (void **)&a.DeviceSupported, 0},
        {"cuptiProfilerHostInitialize", (void **)&a.HostInitialize, 0},
        {"cuptiProfilerHostDeinitialize", (void **)&a.HostDeinitialize, 0},
        {"cuptiProfilerHostGetSupportedChips", (void **)&a.HostGetSupportedChips, 0},
        {"cuptiProfilerHostGetMetricProperties", (void **)&a.HostGetMetricProperties, 0},
        {"cuptiProfilerHostConfigAddMetrics", (void **)&a.HostConfigAddMetrics, 0},
        {"cuptiProfilerHostGetConfigImageSize", (void **)&a.HostGetConfigImageSize, 0},
        {"cuptiProfilerHostGetConfigImage", (void **)&a.HostGetConfigImage, 0},
        {"cuptiProfilerHostGetNumOfPasses", (void **)&a.HostGetNumOfPasses, 0},
        {"cuptiProfilerHostEvaluateToGpuValues", (void **)&a.HostEvaluateToGpuValues, 0},
        {"cuptiRangeProfilerEnable", (void **)&a.RPEnable, 0},
        {"cuptiRangeProfilerDisable", (void **)&a.RPDisable, 0},
        {"cuptiRangeProfilerSetConfig", (void **)&a.RPSetConfig, 0},
        {"cuptiRangeProfilerStart", (void **)&a.RPStart, 0},
        {"cuptiRangeProfilerStop", (void **)&a.RPStop, 0},
        {"cuptiRangeProfilerPushRange", (void **)&a.RPPushRange, 0},
        {"cuptiRangeProfilerPopRange", (void **)&a.RPPopRange, 0},
        {"cuptiRangeProfilerDecodeData", (void **)&a.RPDecodeData, 0},
        {"cuptiRangeProfilerGetCounterDataSize", (void **)&a.RPGetCounterDataSize, 0},
        {"cuptiRangeProfilerCounterDataImageInitialize", (void **)&a.RPCounterDataImageInitialize, 0},
        {"cuptiRangeProfilerGetCounterDataInfo", (void **)&a.RPGetCounterDataInfo, 0},
    };
    if ((rc = cupti_bind(syms, DYNLIB_COUNT(syms), 1, st)))
        goto out;
    api = a;
    api_loaded = 1;
out:
    pthread_mutex_unlock(&load_mu);
    return rc;
}

/* ---- host side ---- */

int profile_chips(const char *const **names, size_t *n, ks_status *st)
{
    *names = NULL;
    *n = 0;
    if (profile_load(st))
        return st->code;
    ph_chips_params p;
    memset(&p, 0, sizeof p);
    p.structSize = PH_SIZE(ph_chips_params, ppChipNames);
    CUptiResult r = api.HostGetSupportedChips(&p);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiProfilerHostGetSupportedChips");
    *names = p.ppChipNames;
    *n = p.numChips;
    return KS_OK;
}

static int host_init(const char *chip, const uint8_t *avail, ph_object **out, ks_status *st)
{
    ph_init_params p;
    memset(&p, 0, sizeof p);
    p.structSize = PH_SIZE(ph_init_params, pHostObject);
    p.profilerType = PH_RANGE_PROFILER;
    p.pChipName = chip;
    p.pCounterAvailabilityImage = avail;
    CUptiResult r = api.HostInitialize(&p);
    if (r != CUPTI_SUCCESS) {
        *out = NULL;
        return cupti_fail(st, r, "cuptiProfilerHostInitialize");
    }
    *out = p.pHostObject;
    return KS_OK;
}

static void host_deinit(ph_object *h)
{
    if (!h)
        return;
    ph_deinit_params p;
    memset(&p, 0, sizeof p);
    p.structSize = PH_SIZE(ph_deinit_params, pHostObject);
    p.pHostObject = h;
    (void)api.HostDeinitialize(&p);
}

/* 1 when the host object's chip knows the metric (name with roll-up). */
static int host_knows(ph_object *h, const char *name, CUptiResult *why)
{
    ph_props_params p;
    memset(&p, 0, sizeof p);
    p.structSize = PH_SIZE(ph_props_params, metricType);
    p.pHostObject = h;
    p.pMetricName = name;
    CUptiResult r = api.HostGetMetricProperties(&p);
    if (why)
        *why = r;
    return r == CUPTI_SUCCESS;
}

int profile_check_metrics(const char *chip, const char *const *names, size_t n, int *known,
                          ks_status *st)
{
    if (!chip || (n && (!names || !known)))
        return ks_fail(st, KS_EINVAL, 0, "profile_check_metrics: bad arguments");
    if (profile_load(st))
        return st->code;
    ph_object *h;
    if (host_init(chip, NULL, &h, st))
        return st->code;
    for (size_t i = 0; i < n; i++)
        known[i] = names[i] && host_knows(h, names[i], NULL);
    host_deinit(h);
    return KS_OK;
}

/* ---- sessions ---- */

/* CUPTI counts the "sass" metrics (smsp__sass_*, sm__sass_*) by patching
 * the loaded code at the range's start, not with hardware counters: the
 * patched run is slower (20x for an FFMA loop on the H200) and the patches
 * belong to the code loaded at that start. */
int profile_metric_patched(const char *name)
{
    return name && strstr(name, "__sass_") != NULL;
}

struct profile_session {
    cuda_ctx *ctx;
    int ordinal;
    char chip[64];
    ph_object *host;
    uint8_t *config;
    size_t config_size;
    int passes;
    double phase_s[PROFILE_PHASES];
    size_t n;
    char **names;
    double *values;
    size_t nskip;
    char **skip_names;
    char **skip_reasons;
    /* The counter-data image, sized for the live object it was sized with. */
    uint8_t *data;
    size_t data_size;
    const void *data_obj;
    int reused; /* the last measurement found the object enabled */
    int patched; /* a metric is counted by SASS patching: never kept enabled */
};

/* The range profiler object stays enabled on its context from one
 * measurement to the next when asked (profile_set_persistent): on an H200
 * the first start after an enable costs 140 to 190 ms whatever the metric
 * list, which would otherwise be paid by every candidate. Off by default:
 * on the H200 two workers kept alive this way died with SIGSEGV in a later
 * instruction stage (docs/profile.md). It serves one session: an object configured for one
 * metric list and then set to another's counts nothing for the metrics of
 * the later passes (NaN on driver 580), so another session's measurement
 * disables it and enables its own. It is disabled too when a measurement
 * fails, when its session goes, when a session is created (CUPTI will not
 * report counter availability meanwhile), when the SASS metrics API needs
 * CUPTI, or when persistence is turned off (profile_set_persistent). */
static struct {
    CUcontext ctx;
    CUpti_RangeProfiler_Object *obj;
    const profile_session *owner; /* whose configuration it was enabled for */
} live;
static int persistent = 0;
static CUptiResult live_disable(void);

/* One-time CUPTI profiler initialisation for the process. */
static int profiler_init(ks_status *st)
{
    if (profiler_initialized)
        return KS_OK;
    CUpti_Profiler_Initialize_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
    CUptiResult r = api.ProfilerInitialize(&p);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiProfilerInitialize");
    profiler_initialized = 1;
    return KS_OK;
}

int profile_ready(ks_status *st)
{
    if (cuda_load(st))
        return st->code;
    if (profile_load(st))
        return st->code;
    return profiler_init(st);
}

int profile_chip_name(int ordinal, char *buf, size_t n, ks_status *st)
{
    if (n)
        buf[0] = '\0';
    if (profile_ready(st))
        return st->code;
    CUpti_Device_GetChipName_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    p.deviceIndex = (size_t)ordinal;
    CUptiResult r = api.DeviceGetChipName(&p);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiDeviceGetChipName");
    snprintf(buf, n, "%s", p.pChipName ? p.pChipName : "");
    return KS_OK;
}

static const char *level_name(CUpti_Profiler_Support_Level l)
{
    switch (l) {
    case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED: return "unsupported";
    case CUPTI_PROFILER_CONFIGURATION_DISABLED: return "disabled";
    case CUPTI_PROFILER_CONFIGURATION_SUPPORTED: return "supported";
    default: return "unknown";
    }
}

int profile_device_supported(int ordinal, ks_status *st)
{
    if (profile_ready(st))
        return st->code;
    CUpti_Profiler_DeviceSupported_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
    p.cuDevice = (CUdevice)ordinal;
    p.api = CUPTI_PROFILER_RANGE_PROFILING;
    CUptiResult r = api.DeviceSupported(&p);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiProfilerDeviceSupported");
    if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        return KS_OK;
    char why[256] = "";
    struct {
        const char *what;
        CUpti_Profiler_Support_Level l;
    } f[] = {
        {"architecture", p.architecture}, {"SLI", p.sli}, {"vGPU", p.vGpu},
        {"confidential computing", p.confidentialCompute}, {"CMP board", p.cmp}, {"WSL", p.wsl},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (f[i].l != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
            size_t u = strlen(why);
            snprintf(why + u, sizeof why - u, "%s%s: %s", u ? ", " : "", f[i].what, level_name(f[i].l));
        }
    }
    return ks_fail(st, KS_EUNSUPPORTED, 0, "profiling is not supported on device %d (%s)", ordinal,
                   why[0] ? why : level_name(p.isSupported));
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void profile_session_destroy(profile_session *s)
{
    if (!s)
        return;
    if (live.owner == s)
        profile_release();
    free(s->data);
    host_deinit(s->host);
    free(s->config);
    for (size_t i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    free(s->values);
    for (size_t i = 0; i < s->nskip; i++) {
        free(s->skip_names[i]);
        free(s->skip_reasons[i]);
    }
    free(s->skip_names);
    free(s->skip_reasons);
    free(s);
}

static int add_skip(profile_session *s, const char *name, const char *reason)
{
    char *n = dup_str(name), *r = dup_str(reason);
    if (!n || !r) {
        free(n);
        free(r);
        return -1;
    }
    s->skip_names[s->nskip] = n;
    s->skip_reasons[s->nskip] = r;
    s->nskip++;
    return 0;
}

/* names on a fresh host object for chip (avail: the device's counter
 * availability image, or NULL offline): the host object, the config image
 * and the number of passes it needs (0 when CUPTI does not say). */
typedef struct {
    ph_object *host;
    uint8_t *config;
    size_t config_size;
    int passes;
} config_image;

static int make_config(const char *chip, const uint8_t *avail, char *const *names, size_t n,
                       config_image *out, ks_status *st)
{
    memset(out, 0, sizeof *out);
    if (host_init(chip, avail, &out->host, st))
        return st->code;
    ph_add_params a;
    memset(&a, 0, sizeof a);
    a.structSize = PH_SIZE(ph_add_params, numMetrics);
    a.pHostObject = out->host;
    a.ppMetricNames = (const char **)names;
    a.numMetrics = n;
    CUptiResult r = api.HostConfigAddMetrics(&a);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiProfilerHostConfigAddMetrics");
    ph_cfgsize_params z;
    memset(&z, 0, sizeof z);
    z.structSize = PH_SIZE(ph_cfgsize_params, configImageSize);
    z.pHostObject = out->host;
    r = api.HostGetConfigImageSize(&z);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiProfilerHostGetConfigImageSize");
    out->config = calloc(1, z.configImageSize ? z.configImageSize : 1);
    if (!out->config)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory for the profiler config image");
    out->config_size = z.configImageSize;
    ph_cfg_params c;
    memset(&c, 0, sizeof c);
    c.structSize = PH_SIZE(ph_cfg_params, pConfigImage);
    c.pHostObject = out->host;
    c.configImageSize = out->config_size;
    c.pConfigImage = out->config;
    r = api.HostGetConfigImage(&c);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(st, r, "cuptiProfilerHostGetConfigImage");
    ph_passes_params p;
    memset(&p, 0, sizeof p);
    p.structSize = PH_SIZE(ph_passes_params, numOfPasses);
    p.configImageSize = out->config_size;
    p.pConfigImage = out->config;
    if (api.HostGetNumOfPasses(&p) == CUPTI_SUCCESS)
        out->passes = (int)p.numOfPasses;
    return KS_OK;
}

static void free_config(config_image *c)
{
    host_deinit(c->host);
    free(c->config);
    memset(c, 0, sizeof *c);
}

int profile_count_passes(const char *chip, const char *const *names, size_t n, int *passes, ks_status *st)
{
    if (!chip || !passes || !n || !names)
        return ks_fail(st, KS_EINVAL, 0, "profile_count_passes: bad arguments");
    *passes = 0;
    if (profile_load(st))
        return st->code;
    config_image c;
    int rc = make_config(chip, NULL, (char *const *)names, n, &c, st);
    if (!rc)
        *passes = c.passes;
    free_config(&c);
    return rc;
}

/* Adds s->names to a fresh host object and builds the config image. */
static int build_config(profile_session *s, const uint8_t *avail, ks_status *st)
{
    config_image c;
    int rc = make_config(s->chip, avail, s->names, s->n, &c, st);
    if (rc) {
        free_config(&c);
        return rc;
    }
    s->host = c.host;
    s->config = c.config;
    s->config_size = c.config_size;
    s->passes = c.passes;
    return KS_OK;
}

/* Each metric alone on a scratch host object: those that cannot be
 * configured are moved to the skipped list. For when the whole list fails. */
static int weed_out(profile_session *s, const uint8_t *avail, ks_status *st)
{
    size_t keep = 0;
    for (size_t i = 0; i < s->n; i++) {
        ph_object *h;
        if (host_init(s->chip, avail, &h, st))
            return st->code;
        ph_add_params a;
        memset(&a, 0, sizeof a);
        a.structSize = PH_SIZE(ph_add_params, numMetrics);
        a.pHostObject = h;
        a.ppMetricNames = (const char **)&s->names[i];
        a.numMetrics = 1;
        CUptiResult r = api.HostConfigAddMetrics(&a);
        host_deinit(h);
        if (r == CUPTI_SUCCESS) {
            s->names[keep++] = s->names[i];
        } else {
            char why[160];
            snprintf(why, sizeof why, "cannot be configured on %s: %s", s->chip, cupti_result_name((int)r));
            if (add_skip(s, s->names[i], why))
                return ks_fail(st, KS_ENOMEM, 0, "out of memory");
            free(s->names[i]);
        }
    }
    s->n = keep;
    return KS_OK;
}

int profile_session_create(cuda_ctx *c, const char *const *names, size_t n,
                           profile_session **out, ks_status *st)
{
    *out = NULL;
    if (!c || (n && !names))
        return ks_fail(st, KS_EINVAL, 0, "profile_session_create: bad arguments");
    if (profile_ready(st))
        return st->code;
    if (cuda_ctx_use(c, st))
        return st->code;
    int ordinal = cuda_ctx_ordinal(c);
    if (profile_device_supported(ordinal, st))
        return st->code;

    profile_session *s = calloc(1, sizeof *s);
    if (!s)
        return ks_fail(st, KS_ENOMEM, 0, "out of memory");
    s->ctx = c;
    s->ordinal = ordinal;
    uint8_t *avail = NULL;
    int rc = profile_chip_name(ordinal, s->chip, sizeof s->chip, st);
    if (rc)
        goto fail;

    /* The list: the caller's, or the chip's table. */
    const profile_metric *rows = NULL;
    if (!names) {
        rows = profile_metrics_for(s->chip, &n);
        if (!rows) {
            rc = ks_fail(st, KS_EUNSUPPORTED, 0, "klab has no metric list for chip %s", s->chip);
            goto fail;
        }
    }
    s->names = calloc(n ? n : 1, sizeof *s->names);
    s->skip_names = calloc(n ? n : 1, sizeof *s->skip_names);
    s->skip_reasons = calloc(n ? n : 1, sizeof *s->skip_reasons);
    if (!s->names || !s->skip_names || !s->skip_reasons) {
        rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
        goto fail;
    }

    /* Counter availability for this context. CUPTI refuses to say while a
     * range profiler is enabled (CUPTI_ERROR_INVALID_PARAMETER on driver
     * 580), so one kept from an earlier measurement is disabled first; the
     * next measurement enables it again. */
    (void)live_disable();
    CUpti_Profiler_GetCounterAvailability_Params ca;
    memset(&ca, 0, sizeof ca);
    ca.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
    ca.ctx = cuda_ctx_handle(c);
    CUptiResult r = api.GetCounterAvailability(&ca);
    if (r != CUPTI_SUCCESS) {
        rc = cupti_fail(st, r, "cuptiProfilerGetCounterAvailability");
        goto fail;
    }
    avail = calloc(1, ca.counterAvailabilityImageSize ? ca.counterAvailabilityImageSize : 1);
    if (!avail) {
        rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
        goto fail;
    }
    ca.pCounterAvailabilityImage = avail;
    r = api.GetCounterAvailability(&ca);
    if (r != CUPTI_SUCCESS) {
        rc = cupti_fail(st, r, "cuptiProfilerGetCounterAvailability");
        goto fail;
    }

    /* Names the chip does not know are skipped, with the reason. */
    ph_object *probe;
    if ((rc = host_init(s->chip, avail, &probe, st)))
        goto fail;
    for (size_t i = 0; i < n; i++) {
        const char *name = rows ? rows[i].name : names[i];
        if (!name)
            continue;
        int dup = 0;
        for (size_t j = 0; j < s->n; j++)
            dup = dup || strcmp(s->names[j], name) == 0;
        if (dup)
            continue;
        CUptiResult why;
        if (host_knows(probe, name, &why)) {
            if (!(s->names[s->n] = dup_str(name))) {
                host_deinit(probe);
                rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
                goto fail;
            }
            s->n++;
        } else {
            char reason[160];
            snprintf(reason, sizeof reason, "not a metric of %s (%s)", s->chip, cupti_result_name((int)why));
            if (add_skip(s, name, reason)) {
                host_deinit(probe);
                rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
                goto fail;
            }
        }
    }
    host_deinit(probe);
    if (s->n == 0) {
        rc = ks_fail(st, KS_EINVAL, 0, "none of the %zu metrics exists on %s", n, s->chip);
        goto fail;
    }
    for (size_t i = 0; i < s->n; i++)
        s->patched = s->patched || profile_metric_patched(s->names[i]);

    rc = build_config(s, avail, st);
    if (rc && rc != KS_ENOMEM) {
        /* One bad metric spoils the list: find it, then try again. */
        host_deinit(s->host);
        s->host = NULL;
        free(s->config);
        s->config = NULL;
        if ((rc = weed_out(s, avail, st)))
            goto fail;
        if (s->n == 0) {
            rc = ks_fail(st, KS_EINVAL, 0, "none of the metrics can be configured on %s", s->chip);
            goto fail;
        }
        rc = build_config(s, avail, st);
    }
    if (rc)
        goto fail;
    s->values = malloc(s->n * sizeof *s->values);
    if (!s->values) {
        rc = ks_fail(st, KS_ENOMEM, 0, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < s->n; i++)
        s->values[i] = NAN;
    free(avail);
    *out = s;
    return KS_OK;
fail:
    free(avail);
    profile_session_destroy(s);
    return rc;
}

/* Best-effort teardown of a measurement that failed half-way. */
static void rp_abort(CUpti_RangeProfiler_Object *obj, int in_range, int started)
{
    if (in_range) {
        CUpti_RangeProfiler_PopRange_Params p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE;
        p.pRangeProfilerObject = obj;
        (void)api.RPPopRange(&p);
    }
    if (started) {
        CUpti_RangeProfiler_Stop_Params p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
        p.pRangeProfilerObject = obj;
        (void)api.RPStop(&p);
    }
}

/* Passes are bounded: a config never needs this many, and a region that
 * keeps CUPTI from finishing must not loop forever. */
#define MAX_PASSES 512

/* One measurement; *ran = 1 once the first pass began (the region ran). */
static int measure_once(profile_session *s, profile_pass_fn prepare, profile_pass_fn run, void *ud,
                        int *passes, int *ran, ks_status *st)
{
    *ran = 0;
    if (passes)
        *passes = 0;
    if (!s || !run)
        return ks_fail(st, KS_EINVAL, 0, "profile_session_measure: bad arguments");
    if (measuring)
        return ks_fail(st, KS_EINVAL, 0, "a profiled measurement is already running (no nesting)");
    if (cupti_act_active())
        return ks_fail(st, KS_EINVAL, 0,
                       "a CUPTI activity session (timing) is active; profile outside of it");
    if (cuda_ctx_use(s->ctx, st))
        return st->code;
    measuring = 1;
    for (int i = 0; i < PROFILE_PHASES; i++)
        s->phase_s[i] = 0;
    double t = clock_now(), t_next;
#define PHASE(k) (t_next = clock_now(), s->phase_s[k] += t_next - t, t = t_next)

    int rc = KS_OK;
    CUptiResult r;
    if (live.obj && (live.ctx != cuda_ctx_handle(s->ctx) || live.owner != s))
        (void)live_disable();
    int reused = live.obj != NULL;
    if (!live.obj) {
        CUpti_RangeProfiler_Enable_Params en;
        memset(&en, 0, sizeof en);
        en.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
        en.ctx = cuda_ctx_handle(s->ctx);
        r = api.RPEnable(&en);
        if (r != CUPTI_SUCCESS) {
            rc = cupti_fail(st, r, "cuptiRangeProfilerEnable");
            measuring = 0;
            return rc;
        }
        live.obj = en.pRangeProfilerObject;
        live.ctx = en.ctx;
        live.owner = s;
    }
    CUpti_RangeProfiler_Object *obj = live.obj;
    s->reused = reused;
    PHASE(PROFILE_PHASE_ENABLE);

    if (s->data_obj != obj) {
        CUpti_RangeProfiler_GetCounterDataSize_Params cs;
        memset(&cs, 0, sizeof cs);
        cs.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
        cs.pRangeProfilerObject = obj;
        cs.pMetricNames = (const char **)s->names;
        cs.numMetrics = s->n;
        cs.maxNumOfRanges = 1;
        cs.maxNumRangeTreeNodes = 1;
        r = api.RPGetCounterDataSize(&cs);
        if (r != CUPTI_SUCCESS) {
            rc = cupti_fail(st, r, "cuptiRangeProfilerGetCounterDataSize");
            goto done;
        }
        free(s->data);
        s->data_obj = NULL;
        s->data_size = cs.counterDataSize;
        s->data = calloc(1, s->data_size ? s->data_size : 1);
        if (!s->data) {
            rc = ks_fail(st, KS_ENOMEM, 0, "out of memory for the counter data image");
            goto done;
        }
        s->data_obj = obj;
    }
    /* A fresh image every measurement: it holds one range. */
    uint8_t *data = s->data;
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci;
    memset(&ci, 0, sizeof ci);
    ci.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    ci.pRangeProfilerObject = obj;
    ci.counterDataSize = s->data_size;
    ci.pCounterData = data;
    r = api.RPCounterDataImageInitialize(&ci);
    if (r != CUPTI_SUCCESS) {
        rc = cupti_fail(st, r, "cuptiRangeProfilerCounterDataImageInitialize");
        goto done;
    }

    CUpti_RangeProfiler_SetConfig_Params sc;
    memset(&sc, 0, sizeof sc);
    sc.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
    sc.pRangeProfilerObject = obj;
    sc.configSize = s->config_size;
    sc.pConfig = s->config;
    sc.counterDataImageSize = s->data_size;
    sc.pCounterDataImage = data;
    sc.range = CUPTI_UserRange;
    sc.replayMode = CUPTI_UserReplay;
    sc.maxRangesPerPass = 1;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    r = api.RPSetConfig(&sc);
    if (r != CUPTI_SUCCESS) {
        rc = cupti_fail(st, r, "cuptiRangeProfilerSetConfig");
        goto done;
    }

    PHASE(PROFILE_PHASE_CONFIG);
    *ran = 1;
    int pass = 0;
    for (;;) {
        if (pass >= MAX_PASSES) {
            rc = ks_fail(st, KS_EUNSUPPORTED, 0, "CUPTI did not finish after %d passes", MAX_PASSES);
            goto done;
        }
        /* The pass's own preparation (copies, memsets, an L2 flush) must be
         * finished before the range starts, so none of it is counted. */
        if (prepare && ((rc = prepare(ud, pass, st)) || (rc = cuda_ctx_sync(s->ctx, st))))
            goto done;
        PHASE(PROFILE_PHASE_PREPARE);
        CUpti_RangeProfiler_Start_Params sp;
        memset(&sp, 0, sizeof sp);
        sp.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
        sp.pRangeProfilerObject = obj;
        r = api.RPStart(&sp);
        if (r != CUPTI_SUCCESS) {
            rc = cupti_fail(st, r, "cuptiRangeProfilerStart");
            goto done;
        }
        PHASE(PROFILE_PHASE_START);
        CUpti_RangeProfiler_PushRange_Params pr;
        memset(&pr, 0, sizeof pr);
        pr.structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE;
        pr.pRangeProfilerObject = obj;
        pr.pRangeName = "klab";
        r = api.RPPushRange(&pr);
        if (r != CUPTI_SUCCESS) {
            rp_abort(obj, 0, 1);
            rc = cupti_fail(st, r, "cuptiRangeProfilerPushRange");
            goto done;
        }
        if ((rc = run(ud, pass, st))) {
            /* The region's work may still be queued: wait for it (ignoring a
             * second failure) so teardown does not race it. */
            ks_status ignored;
            ks_clear(&ignored);
            (void)cuda_ctx_sync(s->ctx, &ignored);
            rp_abort(obj, 1, 1);
            goto done;
        }
        if ((rc = cuda_ctx_sync(s->ctx, st))) {
            rp_abort(obj, 1, 1);
            goto done;
        }
        PHASE(PROFILE_PHASE_RUN);
        CUpti_RangeProfiler_PopRange_Params pp;
        memset(&pp, 0, sizeof pp);
        pp.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE;
        pp.pRangeProfilerObject = obj;
        r = api.RPPopRange(&pp);
        if (r != CUPTI_SUCCESS) {
            rp_abort(obj, 0, 1);
            rc = cupti_fail(st, r, "cuptiRangeProfilerPopRange");
            goto done;
        }
        CUpti_RangeProfiler_Stop_Params so;
        memset(&so, 0, sizeof so);
        so.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
        so.pRangeProfilerObject = obj;
        r = api.RPStop(&so);
        if (r != CUPTI_SUCCESS) {
            rc = cupti_fail(st, r, "cuptiRangeProfilerStop");
            goto done;
        }
        PHASE(PROFILE_PHASE_STOP);
        pass++;
        if (so.isAllPassSubmitted)
            break;
    }
    if (passes)
        *passes = pass;

    CUpti_RangeProfiler_DecodeData_Params dd;
    memset(&dd, 0, sizeof dd);
    dd.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    dd.pRangeProfilerObject = obj;
    r = api.RPDecodeData(&dd);
    if (r != CUPTI_SUCCESS) {
        rc = cupti_fail(st, r, "cuptiRangeProfilerDecodeData");
        goto done;
    }
    CUpti_RangeProfiler_GetCounterDataInfo_Params di;
    memset(&di, 0, sizeof di);
    di.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    di.pCounterDataImage = data;
    di.counterDataImageSize = s->data_size;
    r = api.RPGetCounterDataInfo(&di);
    if (r != CUPTI_SUCCESS) {
        rc = cupti_fail(st, r, "cuptiRangeProfilerGetCounterDataInfo");
        goto done;
    }
    if (di.numTotalRanges < 1) {
        rc = ks_fail(st, KS_ENOTFOUND, 0, "the profiler recorded no range (%zu dropped)",
                     dd.numOfRangeDropped);
        goto done;
    }
    ph_eval_params ev;
    memset(&ev, 0, sizeof ev);
    ev.structSize = PH_SIZE(ph_eval_params, pMetricValues);
    ev.pHostObject = s->host;
    ev.pCounterDataImage = data;
    ev.counterDataImageSize = s->data_size;
    ev.rangeIndex = 0;
    ev.ppMetricNames = (const char **)s->names;
    ev.numMetrics = s->n;
    ev.pMetricValues = s->values;
    for (size_t i = 0; i < s->n; i++)
        s->values[i] = NAN;
    r = api.HostEvaluateToGpuValues(&ev);
    if (r != CUPTI_SUCCESS) {
        for (size_t i = 0; i < s->n; i++)
            s->values[i] = NAN;
        rc = cupti_fail(st, r, "cuptiProfilerHostEvaluateToGpuValues");
        goto done;
    }

done:;
    PHASE(PROFILE_PHASE_EVALUATE);
    /* A failed measurement leaves CUPTI's state unknown: start afresh. A
     * patched session is never kept: its patches would outlive the range,
     * into timed runs and into code loaded later. */
    if (rc != KS_OK || !persistent || s->patched) {
        r = live_disable();
        if (r != CUPTI_SUCCESS && rc == KS_OK)
            rc = cupti_fail(st, r, "cuptiRangeProfilerDisable");
    }
    PHASE(PROFILE_PHASE_DISABLE);
#undef PHASE
    measuring = 0;
    return rc;
}

int profile_session_measure(profile_session *s, profile_pass_fn prepare, profile_pass_fn run,
                            void *ud, int *passes, ks_status *st)
{
    int ran = 0;
    int rc = measure_once(s, prepare, run, ud, passes, &ran, st);
    /* An object kept from an earlier measurement that CUPTI refuses to
     * configure again is replaced by a fresh one, once, before the region
     * ran (a region that ran and failed is not run a second time). */
    if (rc != KS_OK && s && s->reused && !ran) {
        ks_clear(st);
        rc = measure_once(s, prepare, run, ud, passes, &ran, st);
    }
    return rc;
}

static CUptiResult live_disable(void)
{
    if (!live.obj)
        return CUPTI_SUCCESS;
    CUpti_RangeProfiler_Disable_Params dp;
    memset(&dp, 0, sizeof dp);
    dp.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
    dp.pRangeProfilerObject = live.obj;
    CUptiResult r = api.RPDisable(&dp);
    live.obj = NULL;
    live.ctx = NULL;
    live.owner = NULL;
    return r;
}

void profile_release(void)
{
    if (!measuring)
        (void)live_disable();
}

void profile_set_persistent(int on)
{
    persistent = on != 0;
    if (!persistent)
        profile_release();
}

int profile_persistent(void) { return persistent; }

int profile_session_reused(const profile_session *s) { return s ? s->reused : 0; }

double profile_session_phase(const profile_session *s, int phase)
{
    return s && phase >= 0 && phase < PROFILE_PHASES ? s->phase_s[phase] : 0;
}

const char *profile_phase_name(int phase)
{
    static const char *const names[PROFILE_PHASES] = {"enable", "config", "prepare", "start", "run", "stop",
                                                       "evaluate", "disable"};
    return phase >= 0 && phase < PROFILE_PHASES ? names[phase] : "";
}

const char *profile_session_chip(const profile_session *s) { return s ? s->chip : ""; }
size_t profile_session_count(const profile_session *s) { return s ? s->n : 0; }
int profile_session_passes(const profile_session *s) { return s ? s->passes : 0; }

const char *profile_session_name(const profile_session *s, size_t i)
{
    return s && i < s->n ? s->names[i] : NULL;
}

double profile_session_value(const profile_session *s, size_t i)
{
    return s && i < s->n ? s->values[i] : NAN;
}

size_t profile_session_skipped(const profile_session *s) { return s ? s->nskip : 0; }

const char *profile_session_skipped_name(const profile_session *s, size_t i)
{
    return s && i < s->nskip ? s->skip_names[i] : NULL;
}

const char *profile_session_skipped_reason(const profile_session *s, size_t i)
{
    return s && i < s->nskip ? s->skip_reasons[i] : NULL;
}

/* ---- occupancy ---- */

int profile_occupancy(cuda_ctx *c, CUfunction f, int threads, size_t dyn_smem, int *blocks,
                      ks_status *st)
{
    *blocks = 0;
    if (!c || !f || threads <= 0)
        return ks_fail(st, KS_EINVAL, 0, "profile_occupancy: bad arguments");
    CUresult (*fn)(int *, CUfunction, int, size_t) = NULL;
    if (cuda_proc("cuOccupancyMaxActiveBlocksPerMultiprocessor", CUDA_VERSION, (void **)&fn, st))
        return st->code;
    if (cuda_ctx_use(c, st))
        return st->code;
    int n = 0;
    CUresult r = fn(&n, f, threads, dyn_smem);
    if (r != CUDA_SUCCESS)
        return cuda_fail(st, (int)r, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    *blocks = n;
    return KS_OK;
}
