-- The instruction stage (klab.eval.stages): one profiled run, never timed,
-- that says which target instruction families executed and the FLOPs by
-- path. Its finding (a target that did not run) waits for the end of the
-- job: timing still runs, so the result has its time too.

local verdicts = require "klab.eval.verdict"
local device = require "klab.eval.device"
local inputs = require "klab.eval.inputs"
local loaded = require "klab.eval.loaded"
local profiler = require "klab.eval.profiler"

local S = require("klab.eval.worker_state").S
local M = {}

function M.run(run)
  local res, job = run.res, run.job
  local set, serr = inputs.first_set(run)
  if not set then return device.judge_failed(res, "prepare inputs", serr) end
  local all = loaded.written(run)
  local opts = job.opts or {}
  local ps = profiler.stage(S.ctx, function() return loaded.run(run, set) end, job.task, S.props.arch, {
    prepare = function() loaded.fresh(run, all); return true end,
    launches = run.c.launches, kernels = res.stages.load.kernels, funcs = run.c.funcs, device = S.props,
    judge = S.judge,
    -- The supervisor takes the static census while this runs; the listing
    -- is needed here only to join executed counts to opcodes.
    cubin = opts.sass_executed and run.c.cubin or nil, sass_executed = opts.sass_executed,
    full = opts.profile,
    -- Kept enabled from one candidate to the next unless asked not to
    -- (profiler_persistent = false; docs/profile.md). It holds the GPU's
    -- counters: a worker that shares its GPU (KLAB_GPU_LOCK) gives them back
    -- after each measurement, or its neighbour's is refused
    -- (CUPTI_ERROR_HARDWARE_BUSY).
    persistent = opts.profiler_persistent ~= false and (os.getenv("KLAB_GPU_LOCK") or "") == "",
  })
  res.stages.instructions = ps
  if ps.sticky then
    res.unfit = true
    return verdicts.give(res, "runtime_error", { kind = "profiled", message = tostring(ps.reason) })
  end
  if ps.verdict then
    run.finding = verdicts.make(ps.verdict, ps.verdict_detail)
    run.finding.stage = "instructions"
  end
end

-- The instruction stage's measurements (klab.eval.stages declares them),
-- when the profiled run measured: the FLOPs by path, the target families
-- that executed, and the profile's throughputs.
function M.measurements(ps, put)
  if ps.status ~= "ok" then return end
  local fl, p = ps.flops or {}, ps.profile or {}
  put("flops_hgmma", fl.hgmma); put("flops_hmma", fl.hmma); put("flops_utc", fl.utc)
  put("flops_other", fl.other); put("tensor_flop_frac", fl.frac and fl.frac.tensor)
  for name, f in pairs(ps.families or {}) do put("inst_" .. (name:gsub("%.", "_")), f.count) end
  put("verified_instructions", ps.verified and 1 or 0)
  put("sm_pct", p.sm_pct); put("mem_pct", p.mem_pct); put("dram_pct", p.dram_pct)
  put("occupancy_pct", p.occupancy_pct); put("tensor_pipe_pct", p.tensor_pct)
  put("dram_bytes", p.dram_bytes); put("dram_ratio", p.dram_ratio); put("waves", p.waves)
end

return M
