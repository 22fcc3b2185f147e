# A row sum in Triton: one program per row, BLOCK columns at a time in fp32,
# then a tree across the block (tl.sum).
import triton
import triton.language as tl


@triton.jit
def sum_last(X, Y, C, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    base = X + row.to(tl.int64) * C
    for start in range(0, C, BLOCK):
        cols = start + offs
        acc += tl.load(base + cols, mask=cols < C, other=0.0)
    tl.store(Y + row, tl.sum(acc, axis=0))
