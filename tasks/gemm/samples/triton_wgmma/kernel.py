# C = A * B^T in Triton: bf16 in, fp32 accumulation (tl.dot), bf16 out.
# One program per BM x BN tile of C, tiles ordered in groups of GROUP tile
# rows so that programs running together share A and B in L2. On sm_90a
# Triton turns tl.dot into wgmma and pipelines the loads with cp.async over
# num_stages stages.
#
# klab compiles the kernel once per plan, with no alignment assumptions about
# pointers or sizes (Triton's own launcher would specialise on them), so the
# kernel states what the plan knows: K8 (K % 8 == 0) makes every row of A and
# B start on 16 bytes, which lets Triton load 16 bytes at a time and use
# cp.async. Buffers themselves are 256-byte aligned.
import triton
import triton.language as tl


@triton.jit
def gemm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
         K8: tl.constexpr):
    if K8:
        K = (K // 8) * 8            # the same K, now known to be a multiple of 8
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    first_m = (pid // per_group) * GROUP
    rows = tl.minimum(tiles_m - first_m, GROUP)
    pid_m = first_m + (pid % per_group) % rows
    pid_n = (pid % per_group) // rows
    # Rows past M or N wrap to valid ones (their results are never stored).
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a = A + rm.to(tl.int64)[:, None] * K + rk[None, :]
    b = B + rn.to(tl.int64)[:, None] * K + rk[None, :]
    if K8:
        a = tl.multiple_of(a, [16, 16])
        b = tl.multiple_of(b, [16, 16])
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        # Columns past K read as zeros.
        x = tl.load(a, mask=rk[None, :] < K - k * BK, other=0.0)
        y = tl.load(b, mask=rk[None, :] < K - k * BK, other=0.0)
        acc = tl.dot(x, y.T, acc)
        a += BK
        b += BK
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    c = C + cm.to(tl.int64)[:, None] * N + cn[None, :]
    tl.store(c, acc.to(tl.bfloat16), mask=(cm[:, None] < M) & (cn[None, :] < N))
