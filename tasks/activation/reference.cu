// reference.cu: the activation family's trusted reference. Each activation
// in fp64 from the stored input (klab_load reads fp32 or bf16 as a double),
// written as fp32; a thread per element unit, every unit (positions == 0)
// or the units listed in positions. Compiled after klab's prelude; the plan
// in _family.lua passes the input's type, the operation's code and its
// parameter (cuDNN's swish and softplus beta, ELU's alpha).

enum { ACT_RELU = 0, ACT_GELU_TANH = 1, ACT_GELU_ERF = 2, ACT_SILU = 3, ACT_SIGMOID = 4, ACT_TANH = 5,
       ACT_SOFTPLUS = 6, ACT_ELU = 7, ACT_LEAKY_RELU = 8, ACT_HARDTANH = 9, ACT_HARDSIGMOID = 10,
       ACT_SOFTSIGN = 11, ACT_SELU = 12, ACT_SCALE = 13 };

// SELU's constants (Klambauer et al. 2017), as torch has them.
#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717

static __device__ double activation(int op, double x, double p)
{
    switch (op) {
    case ACT_RELU:
        return x > 0.0 ? x : 0.0;
    case ACT_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
    case ACT_GELU_ERF:
        // 1 + erf(x/√2) = erfc(-x/√2), without the cancellation for x < 0.
        return 0.5 * x * erfc(-x * 0.70710678118654752);
    case ACT_SILU:
        return x / (1.0 + exp(-p * x));
    case ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    case ACT_TANH:
        return tanh(x);
    case ACT_SOFTPLUS:
        // log(1 + exp(p x)) / p, written so that neither exp overflows.
        return (fmax(p * x, 0.0) + log1p(exp(-fabs(p * x)))) / p;
    case ACT_ELU:
        return x > 0.0 ? x : p * expm1(x);
    case ACT_LEAKY_RELU:
        return x > 0.0 ? x : p * x;
    case ACT_HARDTANH:
        return fmin(fmax(x, -1.0), 1.0);
    case ACT_HARDSIGMOID:
        return fmin(fmax(x / 6.0 + 0.5, 0.0), 1.0);
    case ACT_SOFTSIGN:
        return x / (1.0 + fabs(x));
    case ACT_SCALE:
        return p * x;
    case ACT_SELU:
        return x > 0.0 ? SELU_SCALE * x : SELU_SCALE * SELU_ALPHA * expm1(x);
    }
    return 0.0;
}

extern "C" __global__ void __launch_bounds__(256)
act_ref(const void *X, int dt, const u64 *positions, u64 n, float *Y, int op, double param)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        Y[i] = (float)activation(op, klab_load(X, klab_unit(positions, i), dt), param);
}
