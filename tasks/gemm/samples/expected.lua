-- Sample solutions of the GEMM tasks and the verdict each must get (each
-- names a folder next to this file). None uses the tasks' target
-- instructions except wgmma_tma, cute_wgmma_tma and triton_tma, so the
-- others are correct but not verified.
return {
  { name = "naive", task = "gemm_bf16", verdict = "target_not_executed",
    why = "one thread per element of C, fp32 sums: correct, no tensor cores" },
  { name = "mma_sync", task = "gemm_bf16", verdict = "target_not_executed",
    why = "mma.sync (HMMA) tensor cores, not wgmma" },
  { name = "wgmma_tma", task = "gemm_bf16", verdict = "passed",
    why = "wgmma and TMA, the Hopper targets",
    -- TMA needs row strides in multiples of 16 bytes: its plan refuses K
    -- that is not a multiple of 8 (plan_error), so the sweep leaves these out.
    unsupported = { "4097x4095x4099", "123x457x789" } },
  { name = "printf_assert", task = "gemm_bf16", verdict = "target_not_executed",
    why = "an honest naive GEMM that uses device assert() and printf: compiled and judged like any other" },
  { name = "fenced_includes", task = "gemm_bf16", verdict = "target_not_executed",
    why = "a tiled SIMT GEMM whose host includes and PyTorch binding sit under #ifndef __CUDACC_RTC__ and #if 0: "
       .. "never read, so never refused" },
  { name = "triton_wgmma", task = "gemm_bf16", verdict = "target_not_executed",
    why = "Triton: tl.dot on 128x256 tiles, which Triton makes wgmma fed by cp.async stages (tl.load); no TMA, "
       .. "which Triton reaches only through tensor descriptors (triton_tma makes them)" },
  { name = "triton_tma", task = "gemm_bf16", verdict = "passed",
    why = "Triton: A and B through tensor descriptors the kernel makes (TMA, the descriptors in the global scratch "
       .. "klab provides), tl.dot on 128x256 tiles as wgmma: the Hopper targets",
    -- Its plan refuses K that is not a multiple of 8 (TMA's 16-byte rows).
    unsupported = { "4097x4095x4099", "123x457x789" } },
  { name = "cute_wgmma_tma", task = "gemm_bf16", verdict = "passed",
    why = "CuTe: SM90_TMA_LOAD_2D into GMMA::Layout_K_SW128_Atom stages, a TiledMMA of two SM90 64x256x16 GMMA "
       .. "atoms: wgmma and TMA, the Hopper targets",
    -- Its plan refuses K that is not a multiple of 8, as wgmma_tma's does.
    unsupported = { "4097x4095x4099", "123x457x789" } },
}
