// baseline.cu: the scan family's shipped baseline (no library in klab has a
// scan). A block of 1024 threads per row: thread t owns the run of
// ceil(C/1024) consecutive elements starting at t*run, adds it in fp32,
// the block scans the runs' totals (a warp scan, then a scan of the warps'
// totals), and each thread adds its run again from its offset, writing Y.
// The row is read twice (the second time mostly from L2). op: 0 inclusive,
// 1 reversed (indices mirrored), 2 exclusive, 3 masked (M: a byte per
// element), 4 inclusive product (the same scan with * and 1). Compiled after
// klab's prelude.

static __device__ __forceinline__ float scan_value(const float *x, const unsigned char *m, u32 i, int op)
{
    return op == 3 && !m[i] ? 0.0f : x[i];
}

extern "C" __global__ void __launch_bounds__(1024)
scan_baseline(const float *X, const unsigned char *M, float *Y, u32 C, int op)
{
    __shared__ float warp_total[32];
    const u64 base = (u64)blockIdx.x * C;
    const float *x = X + base;
    const unsigned char *m = M ? M + base : 0;
    float *y = Y + base;
    const u32 run = (C + blockDim.x - 1) / blockDim.x;
    const u32 lo = min(C, threadIdx.x * run), hi = min(C, lo + run);

    const bool prod = op == 4;
    float total = prod ? 1.0f : 0.0f;
    for (u32 k = lo; k < hi; k++) {
        const float v = scan_value(x, m, op == 1 ? C - 1 - k : k, op);
        total = prod ? total * v : total + v;
    }

    // Exclusive scan of the totals over the block: a warp scan, then a scan
    // of the warps' totals.
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float inc = total;
    for (int off = 1; off < 32; off <<= 1) {
        const float v = __shfl_up_sync(0xffffffffu, inc, off);
        if ((int)lane >= off)
            inc = prod ? inc * v : inc + v;
    }
    if (lane == 31)
        warp_total[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        float w = lane < (blockDim.x >> 5) ? warp_total[lane] : (prod ? 1.0f : 0.0f);
        for (int off = 1; off < 32; off <<= 1) {
            const float v = __shfl_up_sync(0xffffffffu, w, off);
            if ((int)lane >= off)
                w = prod ? w * v : w + v;
        }
        warp_total[lane] = w;
    }
    __syncthreads();
    // What comes before this thread's run: the warp's exclusive prefix
    // (shifted up one lane) combined with the earlier warps' total.
    float before = __shfl_up_sync(0xffffffffu, inc, 1);
    if (lane == 0)
        before = prod ? 1.0f : 0.0f;
    const float earlier = warp > 0 ? warp_total[warp - 1] : (prod ? 1.0f : 0.0f);
    float acc = prod ? before * earlier : before + earlier;

    for (u32 k = lo; k < hi; k++) {
        const u32 i = op == 1 ? C - 1 - k : k;
        const float v = scan_value(x, m, i, op);
        if (prod) {
            acc *= v;
            y[i] = acc;
        } else if (op == 2) {
            y[i] = acc;
            acc += v;
        } else {
            acc += v;
            y[i] = acc;
        }
    }
}
