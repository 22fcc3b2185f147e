-- Known-bad GEMM candidates and the verdict klab must give each one.
-- Each entry names a folder next to this file (kernel.cu + plan.lua).
-- docs/gemm-samples.md explains each kernel and what the harness must do to catch it.
return {
  { name = "writes_nothing", verdict = "incorrect",
    why = "never writes C, so the output keeps the host's poison" },
  { name = "partial_output", verdict = "incorrect",
    why = "writes only rows m < M/2; the other rows keep the poison" },
  { name = "copies_input", verdict = "incorrect",
    why = "copies A into C (C[m,n] = A[m,n] for n < K, else 0) instead of multiplying" },
  { name = "cached_result", verdict = "incorrect",
    why = "memoises the first result in __device__ globals and replays it for later inputs of the same shape; "
       .. "the first trial passes, later trials with fresh inputs get stale output" },
  { name = "first_calls_only", verdict = "incorrect",
    why = "does the work only on the first 3 launches (a __device__ counter), then returns without writing; "
       .. "caught by later trials or by checking the outputs of timed runs" },
  { name = "writes_past_end", verdict = "guard_violation",
    why = "correct C, but also writes 64 bf16 (128 bytes) just past the end of C" },
  { name = "modifies_input", verdict = "input_modified",
    why = "correct C, then changes the first min(K,256) elements of A (zero, or 1.0 where already zero)" },
  { name = "illegal_address", verdict = "runtime_error",
    why = "loads through a wild pointer 2^44 bytes past A: illegal address" },
  { name = "infinite_loop", verdict = "timeout",
    why = "spins forever on a volatile flag that nobody sets" },
  { name = "racy", verdict = "nondeterministic",
    why = "two blocks race to write each tile (one rounds to nearest, one toward zero) after random delays; "
       .. "each output is within tolerance, but two runs on the same inputs differ bitwise" },
  { name = "low_precision", verdict = "incorrect",
    why = "rounds the running sum to bf16 after every multiply-add; on K=5120 the error is far beyond tolerance" },
  { name = "wgmma_never_runs", verdict = "target_not_executed",
    why = "correct, and its code contains wgmma, but only in a branch that never runs: the counters show no HGMMA" },
}
