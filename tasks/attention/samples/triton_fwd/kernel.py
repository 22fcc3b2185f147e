# Attention forward with log-sum-exp in Triton, FlashAttention-2 style: one
# program per BM query rows of one (batch, head), keys and values BN at a
# time, an online softmax in fp32 in the log2 domain. On sm_90a both tl.dot
# become wgmma (Q K^T from shared memory, P V with P in registers).
#
# Q, K, V, O bf16 [B*H, S, D]; LSE fp32 [B*H, S] (natural log). BD is D
# rounded up to a power of two (tl.arange's rule): columns past D load as
# zeros and are never stored. D is a multiple of 8 and buffers are 256-byte
# aligned, so every row starts on 16 bytes (multiple_of says so: klab
# compiles with no alignment assumptions of its own).
import triton
import triton.language as tl


@triton.jit
def attention_fwd(Q, K, V, O, LSE, S, scale, D: tl.constexpr, BD: tl.constexpr, BM: tl.constexpr,
                  BN: tl.constexpr, CAUSAL: tl.constexpr):
    start = tl.program_id(0) * BM
    bh = tl.program_id(1).to(tl.int64)
    base = bh * S * D
    rows = start + tl.arange(0, BM)
    cols = tl.arange(0, BD)
    keys = tl.arange(0, BN)
    dmask = cols[None, :] < D
    q_ptr = tl.multiple_of(Q + base + rows[:, None] * D + cols[None, :], [16, 16])
    q = tl.load(q_ptr, mask=(rows[:, None] < S) & dmask, other=0.0)
    qk_scale = scale * 1.4426950408889634          # s * log2(e): exp becomes exp2
    m = tl.full([BM], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, BD], dtype=tl.float32)
    if CAUSAL:
        end = tl.minimum(start + BM, S)
    else:
        end = S
    for n0 in range(0, end, BN):
        kv = n0 + keys
        kv_mask = (kv[:, None] < S) & dmask
        k = tl.load(tl.multiple_of(K + base + kv[:, None] * D + cols[None, :], [16, 16]), mask=kv_mask, other=0.0)
        x = tl.dot(q, k.T) * qk_scale
        keep = kv[None, :] < S
        if CAUSAL:
            keep = keep & (kv[None, :] <= rows[:, None])
        x = tl.where(keep, x, float("-inf"))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        p = tl.exp2(x - m_new[:, None])
        alpha = tl.exp2(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        v = tl.load(tl.multiple_of(V + base + kv[:, None] * D + cols[None, :], [16, 16]), mask=kv_mask, other=0.0)
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m = m_new
    out = acc / l[:, None]
    o_ptr = tl.multiple_of(O + base + rows[:, None] * D + cols[None, :], [16, 16])
    tl.store(o_ptr, out.to(tl.bfloat16), mask=(rows[:, None] < S) & dmask)
    # log(sum exp(s)) = ln 2 * (m + log2(l)), m being in log2 units.
    tl.store(LSE + bh * S + rows, (m + tl.log2(l)) * 0.6931471805599453, mask=rows < S)
