-- klab.eval: evaluate a candidate on a task, the supervisor's side.
--
--   local eval = require "klab.eval"
--   local s <close> = eval.session{db = "results.db", deadline = 120}
--   local r = s:evaluate(task, candidate, {arch = "sm_90a", timing = true})
--   eval.evaluate(task, candidate, opts)     -- a one-off session
--
-- task is a name ("gemm_bf16/8192x7168x5120") or a descriptor from
-- klab.task; candidate a path (folder or file) or a table from
-- klab.eval.candidate. Compiling and the plan sandbox run here, on the CPU; the
-- GPU stages run in a worker process (klab.eval.gpu) that this session keeps
-- alive across evaluations and replaces when it hangs, crashes or is left
-- unfit by a sticky CUDA error. The supervisor never calls CUDA.
--
-- The result: {task=, candidate=<hash>, name=, arch=, verdict=, reason=,
-- stages={build=, plan=, load=, correctness=, timing=}, device=, cached=}.
-- Each stage of the candidate's code has a limit of its own inside the
-- deadline (opts or session stage_deadlines = {correctness=, instructions=,
-- timing=} seconds; defaults in klab.eval.gpu.STAGE_LIMITS): a kernel that
-- hangs costs that stage's limit, and the timeout's reason names the stage.
-- With a store (opts.db or session db), every result is recorded under an
-- idempotency key, and an evaluation already finished is returned from the
-- store instead of being run again.

local jit = require "klab.jit"
local candidate_mod = require "klab.eval.candidate"
local supervisor = require "klab.proc.supervisor"
local task_mod = require "klab.task"
local plan_mod = require "klab.eval.plan"
local verdicts = require "klab.eval.verdict"
local cjson = require "cjson"
local sys = require "klab.sys"
local profile = require "klab.eval.profile"

local M = {}

local Session = {}
Session.__index = Session

function M.session(opts)
  opts = opts or {}
  local s = setmetatable({ opts = opts, deadline = opts.deadline or 180 }, Session)
  s.sup = supervisor.new { deadline = s.deadline, env = opts.env }
  if opts.db then
    if type(opts.db) == "string" then
      s.db = assert(require("klab.store").open(opts.db))
      s.own_db = true
    else
      s.db = opts.db
    end
  end
  return s
end

function Session:close()
  if self.sup then self.sup:close() end
  if self.own_db and self.db then self.db:close() end
  self.sup, self.db = nil, nil
end
Session.__close = Session.close
Session.__gc = Session.close

-- The first line that says what went wrong: one with "error" or "fatal",
-- past ptxas's closing summary (the cause is above it).
local function first_error_line(log)
  for line in (log or ""):gmatch("[^\n]+") do
    if (line:find("error") or line:find("fatal")) and not line:find("Ptx assembly aborted due to errors", 1, true) then
      return line
    end
  end
  return (log or ""):match("[^\n]+")
end

-- A task input law in the worker's terms: {dist=, a=, b=}.
local function law(init)
  if not init then return nil end
  local d = init.dist
  if d == "normal" then return { dist = d, a = init.mean or 0, b = init.std or 1 } end
  if d == "uniform" or d == "int" then return { dist = d, a = init.lo, b = init.hi } end
  if d == "spiky" then return { dist = d, a = init.p or 0.001, b = init.spike_std or 10 } end
  if d == "const" then return { dist = d, a = init.value or 0 } end
  return { dist = d }
end

-- Per-tensor fp8 scales: fixed powers of two, different for A and B, so a
-- kernel that ignores either scale is wrong by a factor of 2 or 4 while the
-- values stay exact. (The task's "amax" mode names how a framework would
-- choose them; the inputs here are drawn directly in e4m3's range.)
local FP8_SCALES = { A = 0.5, B = 0.25 }

-- The plain description of a task that the worker needs (no functions).
local function job_task(t)
  -- Descriptors are read-only proxies that cjson would encode as empty:
  -- the worker gets plain copies.
  local spec = { name = t.name, family = t.family, dims = {}, buffers = {}, tolerance = {}, flops = t.flops,
    bytes = t.bytes, targets = task_mod.plain(t.targets) }
  for k, v in pairs(t.dims) do spec.dims[k] = v end
  local scale_of = {}
  for operand, sc in pairs(t.scales or {}) do scale_of[sc.buffer] = FP8_SCALES[operand] or 1.0 end
  for _, name in ipairs(t.buffer_order) do
    local b = t.buffers[name]
    local e = { name = name, role = b.role, dtype = b.dtype, count = b.numel, bytes = b.bytes, init = law(t.inputs[name]) }
    if #b.shape == 2 then e.rows, e.cols = b.shape[1], b.shape[2] end
    if scale_of[name] then e.init = { dist = "const", a = scale_of[name] } end
    spec.buffers[#spec.buffers + 1] = e
    if b.role == "output" then
      local tol = t.tolerance[b.dtype]
      spec.tolerance[name] = { atol = tol.atol, rtol = tol.rtol, matched = tol.matched }
    end
  end
  if t.family ~= "gemm" then
    -- Other families name their reference and baseline modules themselves
    -- (klab.eval.refs.<op>, klab.eval.baselines.<lib>), which read these plain copies.
    spec.reference = task_mod.plain(t.reference)
    spec.reference.op = spec.reference.op or t.family
    spec.baseline = t.baseline and task_mod.plain(t.baseline)
    spec.extra = t.extra and task_mod.plain(t.extra)
    return spec
  end
  -- The GEMM family's reference: C = scale_a * scale_b * A . B^T.
  spec.reference = { op = "gemm", A = "A", B = "B", C = "C" }
  local scaled = t.scales and t.scales.A and t.scales.B
  if scaled then
    spec.reference.scale_a = FP8_SCALES.A
    spec.reference.scale_b = FP8_SCALES.B
  end
  local b = t.baseline
  if b and b.lib == "cublaslt" then
    local map = { bf16 = "bf16", f16 = "f16", fp8e4m3 = "e4m3", f32 = "f32" }
    local dt = t.buffers.A.dtype
    local modes = {}
    for _, m in ipairs(b.modes or {}) do
      if m == "fp32" or m == "strict" or m == "default" then modes[#modes + 1] = "f32"
      elseif m == "tf32" then modes[#modes + 1] = "tf32" end
    end
    if #modes == 0 then modes = { "f32" } end
    spec.baseline = { lib = "cublaslt", dtype = map[dt] or dt, modes = modes }
    if scaled then spec.baseline.scale_a, spec.baseline.scale_b = t.scales.A.buffer, t.scales.B.buffer end
  end
  return spec
end

-- Dense tensor-core peaks by input type (TFLOP/s, NVIDIA's datasheet figures
-- for the H100/H200 SXM and the B200), for the fraction of peak.
local PEAK = {
  sm_90a = { bf16 = 989.4, f16 = 989.4, fp8e4m3 = 1978.9, tf32 = 494.7, f32 = 66.9 },
  sm_100a = { bf16 = 2250, f16 = 2250, fp8e4m3 = 4500, tf32 = 1100, f32 = 80 },
}

-- The correctness trials: `trials` fresh seeds, then each distribution of
-- the task (scaled inputs, per-buffer laws, a tolerance scale).
local function job_trials(t)
  local out = {}
  for i = 1, t.trials or 3 do out[#out + 1] = { seed = i, label = "trial " .. i .. " (seed " .. i .. ")" } end
  for i, d in ipairs(t.distributions or {}) do
    local tr = { seed = 100 + i, scale = d.scale, tol_scale = d.tol_scale, label = "distribution " .. (d.name or i) }
    if d.inputs then
      tr.inputs = {}
      for name, init in pairs(d.inputs) do tr.inputs[name] = law(init) end
    end
    out[#out + 1] = tr
  end
  return out
end

local function key_of(t, c, arch, opts)
  -- Custom trials change what "correct" means: they are part of the key.
  local trials = opts.trials and require("klab.experiment.model").json(opts.trials) or nil
  return require("klab.store").hash("klab.eval.1", c.hash, t.name, arch, tostring(opts.timing ~= false),
    tostring(opts.replica or 0), trials)
end

-- A candidate as a folder again (kernel.cu or kernel.ptx, plan.lua), for
-- tools that take a path.
local function write_candidate(c)
  local dir = assert(require("klab.fs").mkdtemp("klab-candidate-"))
  local f = assert(io.open(dir .. "/kernel." .. (c.lang == "ptx" and "ptx" or "cu"), "wb"))
  f:write(c.code)
  f:close()
  if c.plan then
    f = assert(io.open(dir .. "/plan.lua", "wb"))
    f:write(c.plan)
    f:close()
  end
  return dir
end

local function write_temp(bytes)
  local path = assert(require("klab.fs").mkstemp("klab-cubin-"))
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
  return path
end

local function record(self, t, c, arch, key, result)
  if not self.db then return end
  local db = self.db
  local cand = db:put_candidate { language = c.lang, code = c.code, plan = c.plan, source = c.source }
  local meas = {}
  local tm = result.stages.timing
  if tm and tm.candidate then
    meas.median_us = { value = tm.candidate.median, unit = "us" }
    meas.mean_us = { value = tm.candidate.mean, unit = "us" }
    meas.min_us = { value = tm.candidate.min, unit = "us" }
    meas.p10_us = { value = tm.candidate.p10, unit = "us" }
    meas.p90_us = { value = tm.candidate.p90, unit = "us" }
    meas.ci_low_us = { value = tm.candidate.ci_low, unit = "us" }
    meas.ci_high_us = { value = tm.candidate.ci_high, unit = "us" }
    meas.samples = { value = tm.candidate.n, unit = "count" }
    meas.tflops = { value = tm.candidate.tflops, unit = "TFLOP/s" }
    if tm.baseline then
      meas.baseline_median_us = { value = tm.baseline.median, unit = "us" }
      meas.speedup = { value = tm.speedup, unit = "x" }
    end
    if tm.speedup_tf32 then meas.speedup_tf32 = { value = tm.speedup_tf32, unit = "x" } end
  end
  local ps = result.stages.profile
  if ps and ps.status == "ok" then
    local fl, p = ps.flops or {}, ps.profile or {}
    meas.flops_hgmma = { value = fl.hgmma, unit = "FLOP" }
    meas.flops_hmma = { value = fl.hmma, unit = "FLOP" }
    meas.flops_utc = { value = fl.utc, unit = "FLOP" }
    meas.flops_other = { value = fl.other, unit = "FLOP" }
    meas.tensor_flop_frac = { value = fl.frac and fl.frac.tensor, unit = "fraction" }
    for name, f in pairs(ps.families or {}) do
      meas["inst_" .. (name:gsub("%.", "_"))] = { value = f.count, unit = "count" }
    end
    meas.verified_instructions = { value = ps.verified and 1 or 0, unit = "bool" }
    meas.sm_pct = { value = p.sm_pct, unit = "%" }
    meas.mem_pct = { value = p.mem_pct, unit = "%" }
    meas.dram_pct = { value = p.dram_pct, unit = "%" }
    meas.occupancy_pct = { value = p.occupancy_pct, unit = "%" }
    meas.tensor_pipe_pct = { value = p.tensor_pct, unit = "%" }
    meas.dram_bytes = { value = p.dram_bytes, unit = "B" }
    meas.dram_ratio = { value = p.dram_ratio, unit = "x" }
    meas.waves = { value = p.waves, unit = "count" }
  end
  -- The PTX census ("present in source") and the static SASS census
  -- ("present in machine code") travel with every evaluation.
  local b = result.stages.build
  for name, n in pairs(b and b.sass and b.sass.families or {}) do
    meas["sass_static_" .. (name:gsub("%.", "_"))] = { value = n, unit = "count" }
  end
  for fam, n in pairs(b and b.census or {}) do
    if fam ~= "instructions" then meas["ptx_" .. (fam:gsub("[%.:]", "_"))] = { value = n, unit = "count" } end
  end
  if b and b.kernels and b.kernels[1] then
    meas.registers = { value = b.kernels[1].registers, unit = "count" }
  end
  for k, v in pairs(meas) do
    if type(v.value) ~= "number" or v.value ~= v.value or math.abs(v.value) == math.huge then meas[k] = nil end
  end
  local env
  if result.env then
    -- One environment row per worker: the device and libraries it ran with.
    self.envs = self.envs or {}
    local pid = result.worker_pid or 0
    env = self.envs[pid]
    if not env then
      local e = {}
      for k, v in pairs(result.env) do e[k] = v end
      e.extra = { worker_pid = pid }
      env = db:put_environment(e)
      self.envs[pid] = env
    end
  end
  db:record_evaluation {
    key = key, candidate = cand, task = t.name, arch = arch, verdict = result.verdict, reason = result.reason, env = env,
    timing_method = tm and tm.method, detail = cjson.encode(result), measurements = meas,
  }
end

-- Runs the GPU stages in the worker and turns a dead worker into a verdict.
function Session:_gpu(job, deadline)
  local rep = self.sup:run({ module = "klab.eval.gpu", fn = "evaluate", args = job }, { deadline = deadline })
  if rep.status == "finished" then
    local r = rep.result
    if r.unfit then self.sup:retire() end
    return r
  end
  local r = { stages = {}, worker = { status = rep.status, pid = rep.worker_pid, output_tail = rep.output_tail,
    stage = rep.stage, stage_seconds = rep.stage_seconds, stage_expired = rep.stage_expired } }
  local during = rep.stage and (" during " .. rep.stage) or ""
  if rep.status == "timeout" then
    r.verdict = "timeout"
    if rep.stage_expired then
      r.reason = string.format("the %s stage did not finish within its %g s; the kernel was stopped by killing "
        .. "its worker", rep.stage, rep.stage_seconds)
    else
      r.reason = string.format("the evaluation did not finish within %g s%s; the kernel was stopped by killing its "
        .. "worker", deadline, during)
    end
  elseif rep.status == "crashed" then
    r.verdict = "runtime_error"
    r.reason = "the worker died with " .. tostring(rep.signal_name or rep.signal) .. " while running the kernel" ..
      during
  elseif rep.status == "exited" then
    r.verdict = "runtime_error"
    r.reason = "the worker exited with status " .. tostring(rep.exit_code) .. " while running the kernel" .. during
  else
    r.verdict = "unknown"
    r.reason = "the evaluation itself failed: " .. tostring(rep.error)
  end
  return r
end

-- Resolves names to a task and a candidate.
local function resolve(t, c)
  if type(t) == "string" then
    local ok, tt = pcall(task_mod.get, t)
    if not ok then return nil, (tostring(tt):gsub("^[%w_/%.]+:%d+: ", "")) end
    t = tt
  end
  if type(c) == "string" then
    local cc, err = candidate_mod.load(c)
    if not cc then return nil, err end
    c = cc
  end
  return t, c
end

-- The stages that need no GPU: build and plan. Returns the worker's job (or
-- nil after setting result's verdict) and, once the code compiled, the
-- finish function of the static SASS census (for finish_census).
local function prepare(t, c, arch, result, opts)
  local b0 = sys.now()
  local res, err, code, partial = jit.compile { source = c.code, lang = c.lang, arch = arch, name = c.file or c.name,
    cache = opts.cache }
  if not res then
    result.stages.build = { ok = false, log = partial and partial.log or err, code = code }
    local line = first_error_line(partial and partial.log) or err
    if code == "EREJECT" then
      result.verdict, result.reason = "compile_error", "rejected: " .. tostring(err)
    else
      result.verdict, result.reason = "compile_error", "compile error: " .. tostring(line)
    end
    return nil
  end
  result.stages.build = {
    ok = true, kernels = res.kernels, census = res.census, compile_ms = res.compile_ms, cached = res.cached,
    seconds = sys.now() - b0,
    hash = res.hash, cubin_hash = res.cubin_hash, log = res.log, compiler = res.compiler,
  }
  -- "Present in machine code", for every evaluation that compiled, whatever
  -- happens on the GPU (nvdisasm where installed; no GPU needed). The tool
  -- runs while the GPU stages do; finish_census collects it.
  local census = profile.sass_static_start(res.cubin, (t.targets or {})[arch])
  local p0 = sys.now()
  local plan, perr = plan_mod.run(t, c.plan, { arch = arch, name = c.plan_file })
  if not plan then
    result.verdict, result.reason = "plan_error", perr
    return nil, census
  end
  result.stages.plan = { launches = #plan.launches, seconds = sys.now() - p0 }
  local entries = {}
  for _, k in ipairs(res.kernels) do entries[k.name] = true end
  for _, l in ipairs(plan.launches) do
    if not entries[l.kernel] then
      local names = {}
      for n in pairs(entries) do names[#names + 1] = n end
      table.sort(names)
      result.verdict, result.reason = "plan_error", string.format(
        "the plan launches kernel '%s', but the code defines only %s", l.kernel, table.concat(names, ", "))
      return nil, census
    end
  end
  local job = {
    task = job_task(t), cubin_path = write_temp(res.cubin), launches = plan.launches,
    tensormaps = plan.tensormaps, workspace = plan.workspace, trials = opts.trials or job_trials(t),
    timing = opts.timing ~= false, opts = {},
  }
  for k, v in pairs(opts.timing_opts or {}) do job.opts[k] = v end
  if job.opts.peak_tflops == nil then
    local a = t.buffers.A
    job.opts.peak_tflops = PEAK[arch] and a and PEAK[arch][a.dtype] or nil
  end
  if next(job.tensormaps or {}) == nil then job.tensormaps = nil end
  if next(job.workspace or {}) == nil then job.workspace = nil end
  return job, census
end

-- Collects the static SASS census started by prepare into the build stage;
-- seconds is how long the evaluation waited for it, not the tool's run time.
local function finish_census(result, census)
  if not census then return end
  local s0 = sys.now()
  local sass = census()
  result.stages.build.sass = { available = sass.available, tool = sass.tool, reason = sass.reason,
    opcodes = sass.static and sass.static.opcodes, families = sass.static_families, seconds = sys.now() - s0 }
end

-- The stages with limits of their own (defaults: klab.eval.gpu.STAGE_LIMITS).
M.STAGES = { "correctness", "instructions", "timing" }

-- nil, or why name is not one of them.
function M.unknown_stage(name)
  for _, s in ipairs(M.STAGES) do if s == name then return nil end end
  return "unknown stage '" .. tostring(name) .. "' (" .. table.concat(M.STAGES, ", ") .. ")"
end

local function check_stage_deadlines(sd)
  if sd == nil then return nil end
  if type(sd) ~= "table" then error("stage_deadlines must be a table {stage = seconds}", 3) end
  for k, v in pairs(sd) do
    local why = M.unknown_stage(k)
    if why then error("stage_deadlines: " .. why, 3) end
    if type(v) ~= "number" or not (v > 0) then
      error("stage_deadlines." .. k .. " must be a positive number of seconds", 3)
    end
  end
  return sd
end

function Session:evaluate(t, c, opts)
  opts = opts or {}
  t, c = resolve(t, c)
  if not t then return nil, c end
  local arch = opts.arch or self.opts.arch or "sm_90a"
  local key = key_of(t, c, arch, opts)
  if self.db and not opts.force then
    local done = self.db:evaluation_done(key)
    if done and done.detail then
      local ok, prev = pcall(cjson.decode, done.detail)
      if ok and type(prev) == "table" then
        prev.cached = true
        return prev
      end
    end
  end
  local result = { task = t.name, candidate = c.hash, name = c.name, arch = arch, stages = {} }
  local t0 = sys.now()
  local stage_deadlines = check_stage_deadlines(opts.stage_deadlines or self.opts.stage_deadlines)
  local job, census = prepare(t, c, arch, result, opts)
  if job then job.opts.stage_deadlines = stage_deadlines end
  if job and opts.sanitize then
    -- compute-sanitizer memcheck around `klab replay`, twice, as PTXBench
    -- does before timing: a stage of its own, outside the worker.
    local dir = write_candidate(c)
    local san = profile.sanitize(t.name, dir, { klab = sys.exe(), runs = 2 })
    require("klab.fs").remove_tree(dir)
    result.stages.sanitizer = san
    if san.status == "ok" and (san.errors or 0) > 0 then
      result.verdict = "runtime_error"
      result.reason = string.format("compute-sanitizer memcheck found %d error(s): %s", san.errors,
        tostring((san.first or {})[1] or ""))
      os.remove(job.cubin_path)
      job = nil
    end
  end
  if job then
    local g = self:_gpu(job, opts.deadline or self.deadline)
    os.remove(job.cubin_path)
    for k, v in pairs(g.stages or {}) do result.stages[k] = v end
    result.device, result.worker_pid, result.env = g.device, g.worker_pid, g.env
    result.worker = g.worker
    result.verdict, result.reason = g.verdict, g.reason
  end
  finish_census(result, census)
  result.seconds = sys.now() - t0

  record(self, t, c, arch, key, result)
  return result
end

-- Runs a candidate in this process, `runs` times, with no profiler and no
-- timer of klab's own: for ncu or compute-sanitizer wrapped around klab.
-- Calls CUDA here, so never from a supervisor that will fork workers.
function M.replay(t, c, opts)
  opts = opts or {}
  t, c = resolve(t, c)
  if not t then return nil, c end
  local arch = opts.arch
  if not arch then
    local gpu = require "klab.gpu"
    local props = gpu.available() and gpu.device(0)
    arch = props and props.arch or "sm_90a"
  end
  local result = { task = t.name, candidate = c.hash, name = c.name, arch = arch, stages = {} }
  local job, census = prepare(t, c, arch, result, opts)
  if not job then
    finish_census(result, census)
    return result
  end
  local r = require("klab.eval.gpu").replay(job, opts.runs or 1)
  finish_census(result, census)
  os.remove(job.cubin_path)
  for k, v in pairs(r.stages or {}) do result.stages[k] = v end
  result.verdict, result.reason, result.runs, result.seconds = r.verdict, r.reason, r.runs, r.seconds
  return result
end

function M.evaluate(t, c, opts)
  local s <close> = M.session(opts)
  return s:evaluate(t, c, opts)
end

M.verdicts = verdicts
return M
