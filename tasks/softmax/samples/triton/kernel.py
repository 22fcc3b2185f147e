# Row softmax in Triton, bf16 in and out, fp32 inside: one program per row,
# three passes over it (the maximum, the sum of exponentials, the output),
# BLOCK columns at a time, so any row length works.
import triton
import triton.language as tl


@triton.jit
def softmax(X, Y, C, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x = X + row * C
    y = Y + row * C
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, C, BLOCK):
        cols = start + offs
        v = tl.load(x + cols, mask=cols < C, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, v)
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, C, BLOCK):
        cols = start + offs
        v = tl.load(x + cols, mask=cols < C, other=float("-inf")).to(tl.float32)
        s += tl.exp(v - row_max)
    inv = 1.0 / tl.sum(s, axis=0)
    for start in range(0, C, BLOCK):
        cols = start + offs
        v = tl.load(x + cols, mask=cols < C, other=float("-inf")).to(tl.float32)
        tl.store(y + cols, (tl.exp(v - row_max) * inv).to(tl.bfloat16), mask=cols < C)
