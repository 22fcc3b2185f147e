# ReLU in the CuTe DSL: X and Y seen as flat tensors of R*C elements, one
# element per thread, 256 threads a block; the last block's threads past the
# end do nothing.
import cutlass
import cutlass.cute as cute

THREADS = 256


@cute.kernel
def relu_kernel(gX: cute.Tensor, gY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < cute.size(gX):
        v = gX[i]
        gY[i] = v if v > cutlass.Float32(0) else cutlass.Float32(0)


@cute.jit
def relu(mX: cute.Tensor, mY: cute.Tensor):
    n = cute.size(mX)
    x = cute.make_tensor(mX.iterator, cute.make_layout(n))
    y = cute.make_tensor(mY.iterator, cute.make_layout(n))
    relu_kernel(x, y).launch(grid=[cute.ceil_div(n, THREADS), 1, 1], block=[THREADS, 1, 1])
