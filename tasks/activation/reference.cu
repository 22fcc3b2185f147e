// reference.cu: the activation family's trusted reference. Each activation
// in fp64 from the stored input (klab_load reads fp32 or bf16 as a double),
// written as fp32; a thread per element unit, every unit (positions == 0)
// or the units listed in positions. Compiled after klab's prelude; the plan
// in _family.lua passes the input's type, the operation's code and its
// parameter (cuDNN's swish and softplus beta, ELU's alpha). The operations
// are a template over the arithmetic type: the composed tasks' reference
// (tasks/fused/chain.cu) applies them in fp64, their baseline in fp32.

enum { ACT_RELU = 0, ACT_GELU_TANH = 1, ACT_GELU_ERF = 2, ACT_SILU = 3, ACT_SIGMOID = 4, ACT_TANH = 5,
       ACT_SOFTPLUS = 6, ACT_ELU = 7, ACT_LEAKY_RELU = 8, ACT_HARDTANH = 9, ACT_HARDSIGMOID = 10,
       ACT_SOFTSIGN = 11, ACT_SELU = 12, ACT_SCALE = 13, ACT_MISH = 14 };

// SELU's constants (Klambauer et al. 2017), as torch has them.
#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717

// log(1 + exp(x)), written so that exp never overflows.
template <typename R> static __device__ R act_softplus(R x)
{
    return fmax(x, (R)0) + log1p(exp(-fabs(x)));
}

template <typename R> static __device__ R act_apply(int op, R x, R p)
{
    const R one = (R)1, zero = (R)0;
    switch (op) {
    case ACT_RELU:
        return x > zero ? x : zero;
    case ACT_GELU_TANH:
        return (R)0.5 * x * (one + tanh((R)0.79788456080286536 * (x + (R)0.044715 * x * x * x)));
    case ACT_GELU_ERF:
        // 1 + erf(x/√2) = erfc(-x/√2), without the cancellation for x < 0.
        return (R)0.5 * x * erfc(-x * (R)0.70710678118654752);
    case ACT_SILU:
        return x / (one + exp(-p * x));
    case ACT_SIGMOID:
        return one / (one + exp(-x));
    case ACT_TANH:
        return tanh(x);
    case ACT_SOFTPLUS:
        return act_softplus(p * x) / p;
    case ACT_ELU:
        return x > zero ? x : p * expm1(x);
    case ACT_LEAKY_RELU:
        return x > zero ? x : p * x;
    case ACT_HARDTANH:
        return fmin(fmax(x, -one), one);
    case ACT_HARDSIGMOID:
        return fmin(fmax(x / (R)6 + (R)0.5, zero), one);
    case ACT_SOFTSIGN:
        return x / (one + fabs(x));
    case ACT_SCALE:
        return p * x;
    case ACT_SELU:
        return x > zero ? (R)SELU_SCALE * x : (R)(SELU_SCALE * SELU_ALPHA) * expm1(x);
    case ACT_MISH:
        // x·tanh(softplus(x)) (Misra 2019), torch's mish.
        return x * tanh(act_softplus(x));
    }
    return zero;
}

static __device__ double activation(int op, double x, double p) { return act_apply<double>(op, x, p); }

extern "C" __global__ void __launch_bounds__(256)
act_ref(const void *X, int dt, const u64 *positions, u64 n, float *Y, int op, double param)
{
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        Y[i] = (float)activation(op, klab_load(X, klab_unit(positions, i), dt), param);
}
