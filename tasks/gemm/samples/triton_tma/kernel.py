# C = A * B^T in Triton through TMA: bf16 in, fp32 accumulation (tl.dot),
# bf16 out. A and B are read through tensor descriptors the kernel makes
# (tl.make_tensor_descriptor: TMA on sm_90a, the descriptors in Triton's
# global scratch, which klab provides); tl.dot on 128 x 256 tiles becomes
# wgmma. C is stored with masked stores, so N may be any size. TMA needs
# the rows of A and B to start on 16 bytes: K a multiple of 8, which the
# plan checks and `K = (K // 8) * 8` shows Triton.
import triton
import triton.language as tl


@triton.jit
def gemm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    K = (K // 8) * 8                # the same K, now known to be a multiple of 8
    da = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    db = tl.make_tensor_descriptor(B, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    first_m = (pid // per_group) * GROUP
    rows = tl.minimum(tiles_m - first_m, GROUP)
    pid_m = first_m + (pid % per_group) % rows
    pid_n = (pid % per_group) // rows
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    # Rows and columns past the matrix read as zeros (TMA fills them).
    for k in range(0, tl.cdiv(K, BK)):
        a = da.load([pid_m * BM, k * BK])
        b = db.load([pid_n * BN, k * BK])
        acc = tl.dot(a, b.T, acc)
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    c = C + cm.to(tl.int64)[:, None] * N + cn[None, :]
    tl.store(c, acc.to(tl.bfloat16), mask=(cm[:, None] < M) & (cn[None, :] < N))
