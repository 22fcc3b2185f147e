// reference.cu: the scan family's trusted reference. A thread per row unit
// (slot), the row summed in fp64 in index order (from the end for the
// reversed scan), each prefix written as fp32. Compiled after klab's prelude
// (klab_unit, u32, u64). op: 0 inclusive, 1 reversed, 2 exclusive, 3 masked
// (M: one byte per element, set or not), 4 inclusive product.
extern "C" __global__ void __launch_bounds__(64)
scan_ref(const float *X, const unsigned char *M, const u64 *positions, u64 rows, float *Y, u32 C, int op)
{
    const u64 slot = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (slot >= rows)
        return;
    const u64 row = klab_unit(positions, slot);
    const float *x = X + row * C;
    const unsigned char *m = M ? M + row * C : 0;
    float *y = Y + slot * C;
    double acc = 0.0;
    if (op == 4) {
        acc = 1.0;
        for (u32 c = 0; c < C; c++) {
            acc *= (double)x[c];
            y[c] = (float)acc;
        }
        return;
    }
    if (op == 1) {
        for (u32 k = C; k-- > 0;) {
            acc += (double)x[k];
            y[k] = (float)acc;
        }
        return;
    }
    for (u32 c = 0; c < C; c++) {
        if (op == 2) {
            y[c] = (float)acc;
            acc += (double)x[c];
        } else {
            if (op != 3 || m[c])
                acc += (double)x[c];
            y[c] = (float)acc;
        }
    }
}
