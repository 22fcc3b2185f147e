-- klab.eval.peaks: the most a device can do, for the physical floor of a
-- timed run (klab.eval.gpu) and the fraction of peak in reports.
--
--   peaks.tflops(arch, precision, path) -> dense TFLOP/s, or nil when unknown
--       path: "tensor" (the tensor cores' peak for that precision; f32 maps
--       to TF32, the fastest way an f32 task's arithmetic can go) or "simt";
--       nil: the larger of the two.
--   peaks.dram_bytes_per_s(props) -> peak DRAM bandwidth from the device's
--       memory clock and bus width (klab.gpu props), or nil
--   peaks.floor(task, props, path) -> {us=, compute_us=, memory_us=, path=,
--       tflops=, dram_bytes_per_s=}: the physical floor of one run of the
--       task (its FLOPs at the path's peak, its bytes at DRAM bandwidth;
--       us = the larger, 0 when neither is known)
--
-- Figures are NVIDIA's datasheet numbers for the SXM parts (H100/H200 on
-- sm_90a, B200 on sm_100a), dense (no sparsity).

local M = {}

M.TENSOR = {
  sm_90a = { bf16 = 989.4, f16 = 989.4, fp8e4m3 = 1978.9, fp8e5m2 = 1978.9, tf32 = 494.7, f32 = 494.7, f64 = 66.9 },
  sm_100a = { bf16 = 2250, f16 = 2250, fp8e4m3 = 4500, fp8e5m2 = 4500, tf32 = 1100, f32 = 1100, f64 = 40 },
}

M.SIMT = {
  sm_90a = { bf16 = 133.8, f16 = 133.8, f32 = 66.9, tf32 = 66.9, f64 = 33.5 },
  sm_100a = { bf16 = 160, f16 = 160, f32 = 80, tf32 = 80, f64 = 40 },
}

function M.tflops(arch, precision, path)
  local t = M.TENSOR[arch] and M.TENSOR[arch][precision]
  local s = M.SIMT[arch] and M.SIMT[arch][precision]
  if path == "tensor" then return t end
  if path == "simt" then return s end
  if t and s then return math.max(t, s) end
  return t or s
end

function M.dram_bytes_per_s(props)
  if not (props and props.mem_clock_khz and props.bus_width_bits) then return nil end
  if props.mem_clock_khz <= 0 or props.bus_width_bits <= 0 then return nil end
  -- Double data rate: two transfers per memory clock.
  return 2 * props.mem_clock_khz * 1000 * props.bus_width_bits / 8
end

-- No kernel does the task's FLOPs faster than the device's peak for the
-- path it used, nor moves the task's bytes faster than DRAM (L2 is flushed
-- before every timed sample): the floor a candidate's median may not go
-- under, and what a baseline's fraction of the speed of light is taken of.
function M.floor(task, props, path)
  local tflops = props and M.tflops(props.arch, task.precision, path)
  local bw = M.dram_bytes_per_s(props)
  local f = { path = path or "any", tflops = tflops, dram_bytes_per_s = bw }
  f.compute_us = tflops and task.flops and task.flops / (tflops * 1e6) or nil
  f.memory_us = bw and task.bytes and task.bytes / bw * 1e6 or nil
  f.us = math.max(f.compute_us or 0, f.memory_us or 0)
  return f
end

return M
