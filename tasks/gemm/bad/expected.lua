-- Known-bad GEMM candidates and the verdict klab must give each one.
-- Each entry names a folder next to this file (kernel.cu + plan.lua).
-- docs/gemm-samples.md explains each kernel and what the harness must do to catch it.
return {
  { name = "writes_nothing", task = "gemm_bf16", verdict = "incorrect",
    why = "never writes C, so the output keeps the host's poison" },
  { name = "partial_output", task = "gemm_bf16", verdict = "incorrect",
    why = "writes only rows m < M/2; the other rows keep the poison" },
  { name = "copies_input", task = "gemm_bf16", verdict = "incorrect",
    why = "copies A into C (C[m,n] = A[m,n] for n < K, else 0) instead of multiplying" },
  -- State that would carry from run to run cannot: klab restores module
  -- globals before every run, so these kernels compute every time (a
  -- naive dot product per element: correct, no wgmma, and timed as what
  -- they are, far slower than cuBLASLt: max_speedup).
  { name = "cached_result", task = "gemm_bf16", verdict = "target_not_executed", max_speedup = 0.5,
    why = "memoises its first result in __device__ globals to replay it for later inputs of the same shape; "
       .. "the globals are restored before every run, so it never replays" },
  { name = "first_calls_only", task = "gemm_bf16", verdict = "target_not_executed", max_speedup = 0.5,
    why = "would do the work only on its first 3 launches (a __device__ counter); the counter is restored before "
       .. "every run, so every run is a first one" },
  { name = "bank_by_pointer", task = "gemm_bf16", verdict = "target_not_executed", max_speedup = 0.5,
    why = "banks results in __device__ memory keyed by the input pointers and replays them; globals restored and "
       .. "fresh inputs at shifted addresses: the bank never hits" },
  { name = "bank_by_content", task = "gemm_bf16", verdict = "target_not_executed", max_speedup = 0.5,
    why = "banks results keyed by a fingerprint of the inputs' contents; globals restored and every timed run on "
       .. "fresh contents: the bank never hits" },
  { name = "stale_output", task = "gemm_bf16", verdict = "target_not_executed", max_speedup = 0.5,
    why = "skips the work when the output already looks written; outputs are poisoned before every run, timed ones "
       .. "too, so it always computes" },
  { name = "recognizes_input", task = "gemm_bf16", verdict = "incorrect",
    why = "does the work only on inputs it recognises as klab's correctness sets (the generator is public); the "
       .. "first timed run has fresh inputs and its output is checked" },
  { name = "writes_past_end", task = "gemm_bf16", verdict = "guard_violation",
    why = "correct C, but also writes 64 bf16 (128 bytes) just past the end of C" },
  { name = "modifies_input", task = "gemm_bf16", verdict = "input_modified",
    why = "correct C, then changes the first min(K,256) elements of A (zero, or 1.0 where already zero)" },
  { name = "illegal_address", task = "gemm_bf16", verdict = "runtime_error",
    why = "loads through a wild pointer 2^44 bytes past A: illegal address" },
  { name = "infinite_loop", task = "gemm_bf16", verdict = "timeout",
    why = "spins forever on a volatile flag that nobody sets" },
  { name = "racy", task = "gemm_bf16", verdict = "nondeterministic",
    why = "two blocks race to write each tile (one rounds to nearest, one toward zero) after random delays; "
       .. "each output is within tolerance, but two runs on the same inputs differ bitwise" },
  { name = "low_precision", task = "gemm_bf16", verdict = "incorrect",
    why = "rounds the running sum to bf16 after every multiply-add; on K=5120 the error is far beyond tolerance" },
  { name = "wgmma_never_runs", task = "gemm_bf16", verdict = "target_not_executed",
    why = "correct, and its code contains wgmma, but only in a branch that never runs: the counters show no HGMMA" },
  -- The fp8 task's target is the fp8 tensor-core path, not just wgmma and TMA.
  { name = "fp8_as_bf16", task = "gemm_fp8e4m3", verdict = "target_not_executed",
    reason = "the tensor cores ran bf16",
    why = "loads the fp8 tiles by TMA, decodes them to bf16 in shared memory and multiplies with bf16 wgmma: "
       .. "correct, wgmma and TMA ran, but no fp8 tensor-core FLOP (KernelBench-Hard's 'bf16 dressup')" },
  { name = "triton_acc_bf16", task = "gemm_bf16", verdict = "incorrect",
    why = "Triton: each 64-wide step of K is an fp32 tl.dot, but the running sum is kept in bf16; on K=4096 its 64 "
       .. "roundings put C far outside tolerance" },
}
