-- klab.eval.prepare: what the caller's stages (klab.eval.stage.build and
-- .plan) share with the rest of klab.eval: the job they prepare for the
-- worker, the static SASS census the build starts, and those stages run on
-- a CPU worker.
--
--   prepare.spec(task)  -> the plain description of a task the worker gets
--   prepare.trials(task)-> the correctness trials (seeds, distributions)
--   prepare.seeded(trials, seed, proof) -> the trials with their seeds (distributions sampled unless proof is "full")
--   prepare.task_source(path, code) -> the source klab compiles for a kernel a task ships
--   prepare.census_start(run [, cubin]) starts the static SASS census of the candidate's machine code
--   prepare.finish(run) collects the static SASS census the build started
--   prepare.remote(args), prepare.remote_opts(opts): build and plan on a CPU worker
--   prepare.cleanup(run) removes the temporary cubin files of the job
--
-- run = {task = klab.task descriptor, cand = klab.eval.candidate, arch =,
-- opts = evaluation options, result = {stages = {}}}; the stages fill
-- run.job (what klab.eval.gpu.run takes) and run.census.
--
-- Nothing here names a task family: a task brings its reference (kernels
-- and plans, compiled and planned like a candidate's) and its baseline (a
-- library operation the worker's klab.eval.baselines.<lib> runs, or a
-- kernel the task ships, compiled and planned too).

local sass = require "klab.eval.sass"
local task_mod = require "klab.task"
local sys = require "klab.sys"
local seed_mod = require "klab.eval.seed"
local stages = require "klab.eval.stages"

local M = {}

-- Static SASS censuses by machine code (cubin hash and target families):
-- one nvdisasm run per cubin per process, whatever evaluates it again.
local CENSUS, CENSUS_N = {}, 0

-- ---- the task as the worker sees it -------------------------------------

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

-- Descriptors are read-only proxies that JSON would encode as empty: the
-- worker gets plain copies, and nothing that is code.
function M.spec(t)
  local spec = { name = t.name, dims = {}, buffers = {}, tolerance = {}, units = {}, flops = t.flops,
    bytes = t.bytes, targets = task_mod.plain(t.targets), precision = t.precision, work = t.work,
    tensor_type = t.tensor_type,
    baseline = task_mod.plain(t.baseline) }
  spec.baseline.code, spec.baseline.plan, spec.baseline.path = nil, nil, nil
  local sh = spec.baseline.shipped
  if sh then sh.code, sh.plan, sh.path = nil, nil, nil end
  for k, v in pairs(t.dims) do spec.dims[k] = v end
  local scale_of = {}
  for _, sc in pairs(t.scales or {}) do scale_of[sc.buffer] = sc.value end
  for i, name in ipairs(t.buffer_order) do
    local b = t.buffers[name]
    if b.role == "output" then
      -- Every output has as many reference units (rows, elements) as the
      -- others: a checked timed run recomputes the same units of each.
      local units = b.numel // t.units[name]
      spec.total_units = spec.total_units or units
      if units * t.units[name] ~= b.numel or units ~= spec.total_units then
        spec.units_error = string.format("the task's reference units do not divide its outputs alike (%s: %d "
          .. "elements in units of %d)", name, b.numel, t.units[name])
      end
    end
    local e = { name = name, index = i, role = b.role, dtype = b.dtype, count = b.numel, bytes = b.bytes,
      init = law(t.inputs[name]) }
    if #b.shape == 2 then e.rows, e.cols = b.shape[1], b.shape[2] end
    if scale_of[name] then e.init = { dist = "const", a = scale_of[name] } end
    for _, d in ipairs(t.reference.derived or {}) do
      if d == name then e.derived = true end
    end
    spec.buffers[i] = e
    if b.role == "output" then
      local tol = t.tolerance[b.dtype]
      spec.tolerance[name] = { atol = tol.atol, rtol = tol.rtol, matched = tol.matched }
      spec.units[name] = t.units[name]
    end
  end
  return spec
end

-- The correctness trials: `trials` draws of the task's base laws, then each
-- distribution of the task (scaled inputs, per-buffer laws, a tolerance
-- scale). Their contents come from the evaluation's seed (seeded).
function M.trials(t)
  local out = {}
  for i = 1, t.trials or 3 do out[#out + 1] = { label = "trial " .. i } end
  for i, d in ipairs(t.distributions or {}) do
    local tr = { scale = d.scale, tol_scale = d.tol_scale, label = "distribution " .. (d.name or i), distribution = true }
    if d.inputs then
      tr.inputs = {}
      for name, init in pairs(d.inputs) do tr.inputs[name] = law(init) end
    end
    out[#out + 1] = tr
  end
  return out
end

-- The trials of an evaluation with seed s (text): each trial's seed derives
-- from it and the trial's place, whatever seed a caller's trial named. With
-- proof "sampled" (the default), a distribution's trial is compared on
-- sampled units (docs/timing.md); "full" compares every element of every
-- trial.
function M.seeded(trials, s, proof)
  local n = seed_mod.parse(s)
  local out = {}
  for i, tr in ipairs(trials) do
    local c = {}
    for k, v in pairs(tr) do c[k] = v end
    c.seed = seed_mod.format(seed_mod.derive(n, "trial", i))
    c.sampled = (c.distribution and proof ~= "full") or nil
    out[i] = c
  end
  return out
end

-- ---- the build's helpers ----------------------------------------------------

-- A kernel the task ships (its reference, a shipped baseline): compiled
-- after klab's prelude, named by its file so that a compile error points
-- at it. Cached by content like every compile.
function M.task_source(path, code)
  return require("klab.judge").prelude() .. "\n#line 1 \"" .. path .. "\"\n" .. code
end

-- "Present in machine code", for every evaluation that compiled, whatever
-- happens on the GPU (nvdisasm where installed; no GPU needed). The tool
-- runs while the GPU stages do; finish collects it. cubin: the image's
-- bytes (nil: read from the job's image file).
function M.census_start(run, cubin)
  local targets = (run.task.targets or {})[run.arch]
  local ckey = run.result.stages.build.cubin_hash .. "\0" .. table.concat(task_mod.plain(targets or {}), ",")
  if CENSUS[ckey] and run.opts.cache ~= false then
    -- The same machine code was listed before: its census is known.
    local known = CENSUS[ckey]
    run.census = function() return known, true end
    return
  end
  if not cubin then
    cubin = require("klab.fs").read(run.job.candidate.cubin_path)
    if not cubin then return end
  end
  local finish = sass.static_start(cubin, targets)
  run.census = function()
    local sass = finish()
    if sass.available then
      if CENSUS_N >= 256 then CENSUS, CENSUS_N = {}, 0 end
      CENSUS[ckey], CENSUS_N = sass, CENSUS_N + 1
    end
    return sass
  end
end

-- Collects the static SASS census the build started into the build stage;
-- seconds is how long the evaluation waited for it, not the tool's run time.
function M.finish(run)
  if not run.census or not run.result.stages.build then return end
  local s0 = sys.now()
  local sass, cached = run.census()
  run.result.stages.build.sass = { available = sass.available, tool = sass.tool, reason = sass.reason,
    opcodes = sass.static and sass.static.opcodes, families = sass.static_families, seconds = sys.now() - s0,
    cached = cached }
  run.census = nil
end

-- ---- on a CPU worker ---------------------------------------------------------

-- The evaluation options a CPU worker needs (plain data: no functions).
function M.remote_opts(opts)
  local o = {}
  for _, k in ipairs { "trials", "timing", "timing_opts", "cache", "profile", "profiler_persistent", "seed", "proof" } do
    if type(opts[k]) ~= "function" then o[k] = opts[k] end
  end
  return o
end

-- A worker job: the caller's stages of one evaluation, away from the
-- process that schedules them (so that compiles run on every core). args
-- = {task_file=, task=, arch=, opts=, cand = {code=, lang=, plan=, name=,
-- source=}}. Returns {result = the result so far (build, plan, verdict),
-- job = the worker's job when the GPU stages should run}. The compiled
-- images stay in temporary files the scheduling process removes; it also
-- takes the census (census_start), while the GPU stages run.
function M.remote(args)
  local tf = task_mod.load(args.task_file)
  local t
  for _, x in ipairs(tf.tasks) do
    if x.name == args.task then t = x end
  end
  if not t then error("no task " .. tostring(args.task) .. " in " .. tostring(args.task_file)) end
  local c = assert(require("klab.eval.candidate").new(args.cand))
  local opts = args.opts or {}
  opts.census_later = true
  local run = { task = t, cand = c, arch = args.arch, opts = opts, seed = opts.seed,
    result = { task = t.name, candidate = c.hash, name = c.name, arch = args.arch, seed = opts.seed, stages = {},
               klab_version = require("klab.build").version } }
  local ok = stages.run_caller(run)
  return { result = run.result, job = ok and run.job or nil }
end

function M.cleanup(run)
  local j = run.job
  if not j then return end
  local k = j.task.baseline.kernel
  local sk = j.task.baseline.shipped and j.task.baseline.shipped.kernel
  for _, p in ipairs { j.candidate and j.candidate.cubin_path or false, j.reference and j.reference.cubin_path or false,
                       k and k.cubin_path or false, sk and sk.cubin_path or false } do
    if p then os.remove(p) end
  end
end

return M
