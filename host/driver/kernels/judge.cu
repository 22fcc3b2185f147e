// judge.cu: klab's own device kernels, the trusted side of every evaluation.
//
// Compiled at run time with NVRTC for the device's exact architecture (and
// cached like any compile), loaded once per worker. Everything here is plain
// and obviously right rather than fast: fills, poison, guards, checksums, the
// element-wise comparison, gathers and conversions. References live with
// their tasks (tasks/<family>/reference.cu), not here.
//
// Element types are passed as small integers (prelude.cu, host/driver/devkern.h KD_*).

// Compiled after prelude.cu (klab's element types: klab_load, klab_store).
enum { DIST_NORMAL = 0, DIST_UNIFORM = 1, DIST_SPIKY = 2, DIST_INT = 3, DIST_CONST = 4 };

// splitmix64: a counter-based generator, so element i's value depends only
// on (seed, i) and not on the launch shape.
__device__ __forceinline__ u64 mix64(u64 z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ double unit(u64 r) // (0, 1]
{
    return ((r >> 11) + 1) * (1.0 / 9007199254740992.0);
}

__device__ __forceinline__ double normal(u64 seed, u64 i, u64 stream)
{
    u64 a = mix64(seed ^ mix64(i * 4 + stream));
    u64 b = mix64(a);
    return sqrt(-2.0 * log(unit(a))) * cospi(2.0 * unit(b));
}

// Fills n elements: dist picks the law, a and b its parameters (mean/std,
// low/high, the integer range, or spike probability/spike std), scale the
// KernelBench-Verified transform
// (x3, x0.01, x-1) applied after sampling. Zeros stay zeros under scaling.
extern "C" __global__ void k_fill(void *p, u64 n, int dt, int dist, u64 seed, double a, double b,
                                  double scale)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        double v;
        switch (dist) {
        case DIST_NORMAL: v = a + b * normal(seed, i, 0); break;
        case DIST_UNIFORM: v = a + (b - a) * unit(mix64(seed ^ mix64(i * 4 + 1))); break;
        case DIST_SPIKY: {
            // N(0,1) + N(0, b^2) * Bernoulli(a): rare large outliers that break
            // kernels whose softmax or accumulation is not robust (PTXBench's
            // mix is a = 0.001, b = 10).
            v = normal(seed, i, 0);
            if (unit(mix64(seed ^ mix64(i * 4 + 2))) <= a)
                v += b * normal(seed, i, 3);
            break;
        }
        case DIST_INT: {
            double span = b - a + 1.0;
            v = a + floor(unit(mix64(seed ^ mix64(i * 4 + 1))) * span - 1e-9);
            if (v < a) v = a;
            break;
        }
        default: v = a; break;
        }
        klab_store(p, i, dt, v * scale);
    }
}

// Writes a 32-bit pattern over nbytes (poison for outputs, guard pattern).
extern "C" __global__ void k_pattern(unsigned char *p, u64 nbytes, u32 pattern)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < nbytes; i += (u64)gridDim.x * blockDim.x)
        p[i] = (unsigned char)(pattern >> (8 * (i & 3)));
}

// Reads n words through L2 (ld.global.cg), after the timing flush's memset:
// a memset does not displace the lines a kernel marked L2::evict_last,
// loads of a buffer twice the L2 do (docs/timing.md). `sink` is written
// only when the words' xor equals a value no pattern of equal words gives,
// so that the loads cannot be dropped.
extern "C" __global__ void k_l2_read(const u32 *p, u64 n, u32 *sink)
{
    u32 acc = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u32 v;
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p + i));
        acc ^= v;
    }
    if (acc == 0x12345678u)
        *sink = acc;
}

// Counts bytes that differ from the pattern; out[0] count, out[1] first offset.
extern "C" __global__ void k_pattern_check(const unsigned char *p, u64 nbytes, u32 pattern, u64 *out)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < nbytes; i += (u64)gridDim.x * blockDim.x) {
        if (p[i] != (unsigned char)(pattern >> (8 * (i & 3)))) {
            atomicAdd(&out[0], 1ULL);
            atomicMin(&out[1], i);
        }
    }
}

// Order-independent checksum: the sum over byte positions of a mix of
// (position, byte). Any change of any byte changes it with overwhelming odds.
extern "C" __global__ void k_checksum(const unsigned char *p, u64 nbytes, u64 *out)
{
    u64 acc = 0;
    u64 nwords = nbytes / 8;
    const u64 *w = (const u64 *)p;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < nwords; i += stride)
        acc += mix64(mix64(i) ^ w[i]);
    for (u64 i = nwords * 8 + blockIdx.x * (u64)blockDim.x + threadIdx.x; i < nbytes; i += stride)
        acc += mix64(mix64(i + 0x5bd1e995ULL) ^ p[i]);
    atomicAdd(out, acc);
}

// Compares got (dtype dt) with the fp32 reference want, element by element.
// This is klab's one comparison rule (docs/verdicts.md): where the
// reference is finite, an element fails when it is NaN or Inf, or when
// |x-y| > atol and |x-y| / (|y| + 1e-8) > rtol (FlashInfer-Bench's rule);
// where the reference is NaN it must be NaN, and where it is +Inf or -Inf it
// must be that same infinity; anything else there fails.
// out: [0] failures, [1] NaN count, [2] Inf count,
//      [3] max abs error: float bits << 32 | index, [4] max rel error likewise,
//      [5] first failing index (start it at ~0).
// Indices are exact below 2^32 elements. Each thread reduces its own share
// and each warp issues one atomic per figure, so a 60M-element output does
// not serialise on a handful of addresses.
__device__ __forceinline__ u64 warp_max(u64 v)
{
    for (int o = 16; o > 0; o >>= 1) { u64 w = __shfl_xor_sync(0xffffffffu, v, o); v = w > v ? w : v; }
    return v;
}
__device__ __forceinline__ u64 warp_min(u64 v)
{
    for (int o = 16; o > 0; o >>= 1) { u64 w = __shfl_xor_sync(0xffffffffu, v, o); v = w < v ? w : v; }
    return v;
}
__device__ __forceinline__ u64 warp_sum(u64 v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void k_compare(const void *got, int dt, const float *want, u64 n, double atol,
                                     double rtol, u64 *out)
{
    u64 fails = 0, nans = 0, infs = 0, emax = 0, rmax = 0, first = ~0ULL;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        double x = klab_load(got, i, dt);
        double y = want[i];
        const double inf = __longlong_as_double(0x7ff0000000000000LL);
        if (isnan(x)) nans++;
        else if (isinf(x)) infs++;
        int bad;
        double err, rel;
        if (isnan(y) || isinf(y)) {
            // A non-finite reference is matched only by itself.
            bad = isnan(y) ? !isnan(x) : x != y;
            err = rel = bad ? inf : 0.0;
        } else if (isnan(x) || isinf(x)) {
            bad = 1;
            err = rel = inf;
        } else {
            err = fabs(x - y);
            rel = err / (fabs(y) + 1e-8);
            bad = err > atol && rel > rtol;
        }
        if (bad) {
            fails++;
            if (i < first) first = i;
        }
        // Non-negative floats order like their bit patterns.
        u64 ek = ((u64)__float_as_uint((float)err) << 32) | (u32)i;
        u64 rk = ((u64)__float_as_uint((float)rel) << 32) | (u32)i;
        emax = ek > emax ? ek : emax;
        rmax = rk > rmax ? rk : rmax;
    }
    fails = warp_sum(fails); nans = warp_sum(nans); infs = warp_sum(infs);
    emax = warp_max(emax); rmax = warp_max(rmax); first = warp_min(first);
    if ((threadIdx.x & 31) == 0) {
        if (fails) atomicAdd(&out[0], fails);
        if (nans) atomicAdd(&out[1], nans);
        if (infs) atomicAdd(&out[2], infs);
        atomicMax(&out[3], emax);
        atomicMax(&out[4], rmax);
        if (first != ~0ULL) atomicMin(&out[5], first);
    }
}

// Counts elements whose bits differ between two buffers of the same type.
extern "C" __global__ void k_bitdiff(const unsigned char *a, const unsigned char *b, u64 nbytes, u64 *out)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < nbytes; i += (u64)gridDim.x * blockDim.x)
        if (a[i] != b[i]) {
            atomicAdd(&out[0], 1ULL);
            atomicMin(&out[1], i);
        }
}

// n positions drawn uniformly from [0, total), from (seed, i) alone: the
// units a timed run's check recomputes, drawn on the device after the run.
extern "C" __global__ void k_positions(u64 *out, u64 n, u64 total, u64 seed)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        out[i] = mix64(seed ^ mix64(i * 4 + 3)) % total;
}

// Gathers n units of `unit` elements each from src (units positions[i])
// into dst (slot i): the candidate's output at the positions a timed run's
// check drew, laid out like the sampled reference, for k_compare.
extern "C" __global__ void k_gather(const void *src, int dt, const u64 *positions, u64 n, u64 unit, void *dst)
{
    u64 total = n * unit;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        u64 slot = i / unit, e = i - slot * unit;
        klab_store(dst, i, dt, klab_load(src, positions[slot] * unit + e, dt));
    }
}

// Converts n elements between types (used to hand a reference to a model,
// and to make the fp32 image of an output for reporting).
extern "C" __global__ void k_convert(const void *src, int dts, void *dst, int dtd, u64 n)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        klab_store(dst, i, dtd, klab_load(src, i, dts));
}
