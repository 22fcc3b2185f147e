# A row sum in Triton that computes in a narrower type: each value is
# rounded to bf16 and the sums are kept in bf16 (8 significant bits), so a
# row's sum of about +-32 is off by a few tenths, far past the task's 3e-2.
import triton
import triton.language as tl


@triton.jit
def sum_last(X, Y, C, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.bfloat16)
    base = X + row.to(tl.int64) * C
    for start in range(0, C, BLOCK):
        cols = start + offs
        acc += tl.load(base + cols, mask=cols < C, other=0.0).to(tl.bfloat16)
    tl.store(Y + row, tl.sum(acc, axis=0).to(tl.float32))
