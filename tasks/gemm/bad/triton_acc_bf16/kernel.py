# A Triton GEMM that computes in a narrower type: each 64-wide step of K is
# a tl.dot in fp32, but the running sum is kept in bf16 (8 significant
# bits), rounded after every step. On K = 4096 that is 64 roundings of sums
# of about +-64: errors near 1, far past the task's 1e-2 + 1e-2 * |C|.
import triton
import triton.language as tl


@triton.jit
def gemm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(1)
    pid_n = tl.program_id(0)
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a = A + rm.to(tl.int64)[:, None] * K + rk[None, :]
    b = B + rn.to(tl.int64)[:, None] * K + rk[None, :]
    acc = tl.zeros([BM, BN], dtype=tl.bfloat16)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(a, mask=rk[None, :] < K - k * BK, other=0.0)
        y = tl.load(b, mask=rk[None, :] < K - k * BK, other=0.0)
        acc = (acc.to(tl.float32) + tl.dot(x, y.T)).to(tl.bfloat16)
        a += BK
        b += BK
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    c = C + cm.to(tl.int64)[:, None] * N + cn[None, :]
    tl.store(c, acc, mask=(cm[:, None] < M) & (cn[None, :] < N))
