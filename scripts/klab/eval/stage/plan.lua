-- The plan stage (klab.eval.stages): the candidate's launch plan run in the
-- sandbox and checked against the task and the kernels its code defines,
-- then the task's own plans (its reference's full, sampled and derive
-- runs, a shipped baseline's); the job the worker's stages take is
-- assembled here (run.job, with the task as klab.eval.prepare describes it
-- and the compiled images in temporary files).

local jit = require "klab.jit"
local plan_mod = require "klab.eval.plan"
local prepare = require "klab.eval.prepare"
local seed_mod = require "klab.eval.seed"
local sys = require "klab.sys"
local task_mod = require "klab.task"
local verdicts = require "klab.eval.verdict"
local correctness_timing = require "klab.eval.correctness_timing"

local M = {}

-- A compiled image as a file for the worker (it reads and loads it).
local function write_temp(bytes)
  local path = assert(require("klab.fs").mkstemp("klab-cubin-"))
  assert(require("klab.fs").write(path, bytes))
  return path
end

-- The task as a reference plan sees it: every output in fp32, shaped as
-- units (all of them, or nsample in a sampled run), a "positions" buffer
-- (u64, one per unit checked) and nsample among the dimensions.
local function reference_view(t, nsample)
  local view = { dims = {}, buffers = {}, buffer_order = {}, plan = t.plan }
  for k, v in pairs(t.dims) do view.dims[k] = v end
  view.dims.nsample = nsample
  for _, name in ipairs(t.buffer_order) do
    local b = t.buffers[name]
    local v = { name = name, role = b.role, dtype = b.dtype, shape = task_mod.plain(b.shape), numel = b.numel,
      bytes = b.bytes, layout = b.layout }
    if b.role == "output" then
      local n = nsample > 0 and nsample * t.units[name] or b.numel
      v.dtype, v.shape, v.numel, v.bytes = "f32", { n }, n, 4 * n
    end
    view.buffers[name] = v
    view.buffer_order[#view.buffer_order + 1] = name
  end
  local n = math.max(nsample, 1)
  view.buffers.positions = { name = "positions", role = "input", dtype = "u64", shape = { n }, numel = n, bytes = 8 * n }
  view.buffer_order[#view.buffer_order + 1] = "positions"
  return view
end

local function plain_plan(p)
  return { launches = p.launches, workspace = next(p.workspace or {}) and p.workspace or nil,
    tensormaps = next(p.tensormaps or {}) and p.tensormaps or nil }
end

-- The first launch of plan whose arguments differ from the parameters the
-- cubin gives its kernel (kernels: klab.jit's records), as the detail of a
-- plan_error; nil when none does. No GPU is needed: a candidate gets its
-- plan_error at once, and a task's lint (klab tasks --check) finds a
-- reference or baseline plan that does not fit its kernel.
local function misfit(plan, kernels)
  local by_name = {}
  for _, k in ipairs(kernels or {}) do by_name[k.name] = k end
  for _, l in ipairs(plan.launches) do
    local d = plan_mod.check_compiled(l, by_name[l.kernel])
    if d then return d end
  end
end

-- Runs one of the task's own plans for its compiled kernels; a failure is
-- the task's, not the candidate's.
local function task_plan(t, what, source, view, arch, kernels)
  local p, err = plan_mod.run(view, source, { arch = arch })
  local d = p and misfit(p, kernels)
  if d then err = verdicts.reason("plan_error", d) end
  if not p or d then return nil, string.format("the task's %s plan failed: %s", what, tostring(err)) end
  return plain_plan(p)
end

-- The candidate's plan, checked against the kernels its code defines.
local function plan_candidate(run)
  local c, r = run.cand, run.result
  local plan, perr = plan_mod.run(run.task, c.plan, { arch = run.arch, name = c.plan_file, complete = run.complete_plan })
  if not plan then
    verdicts.give(r, "plan_error", { message = tostring(perr) })
    return nil
  end
  r.stages.plan = { launches = #plan.launches }
  local entries = {}
  for _, k in ipairs(run.kernels) do entries[k.name] = true end
  for _, l in ipairs(plan.launches) do
    if not entries[l.kernel] then
      local names = {}
      for n in pairs(entries) do names[#names + 1] = n end
      table.sort(names)
      verdicts.give(r, "plan_error", { kind = "undefined_kernel", kernel = l.kernel, defined = names })
      return nil
    end
  end
  local bad = misfit(plan, run.kernels)
  if bad then
    verdicts.give(r, "plan_error", bad)
    return nil
  end
  local globals = jit.globals(run.cubin)
  return { cubin_path = write_temp(run.cubin), launches = plan.launches,
    tensormaps = next(plan.tensormaps or {}) and plan.tensormaps or nil,
    workspace = next(plan.workspace or {}) and plan.workspace or nil,
    globals = globals and next(globals) and globals or nil }
end

function M.run(run)
  local t, r = run.task, run.result
  local p0 = sys.now()
  local cand
  if run.cand then
    cand = plan_candidate(run)
    if not cand then return nil end
  end
  r.stages.plan = r.stages.plan or {}
  local spec = prepare.spec(t)
  if spec.units_error then
    verdicts.give(r, "unknown", { message = spec.units_error })
    return nil
  end
  -- A timed run's check recomputes `sample` units drawn from the task's
  -- units: never more than the task has, since the sampled plan is made
  -- for exactly as many positions as the timing stage draws and allocates.
  local ref = { sample = math.min(t.reference.sample, spec.total_units), derived = task_mod.plain(t.reference.derived) }
  local err
  ref.full, err = task_plan(t, "reference", t.reference.plan, reference_view(t, 0), run.arch, run.ref_kernels)
  if ref.full then ref.sampled, err = task_plan(t, "reference", t.reference.plan, reference_view(t, ref.sample), run.arch,
    run.ref_kernels) end
  if ref.sampled and t.reference.derive then
    ref.derive, err = task_plan(t, "reference derive", t.reference.derive, reference_view(t, 0), run.arch,
      run.ref_kernels)
  end
  if err then
    verdicts.give(r, "unknown", { message = tostring(err) })
    return nil
  end
  -- A run made without klab.eval (a test's) still gets a seed of its own.
  if not run.seed then
    run.seed = seed_mod.format(seed_mod.new())
    r.seed = run.seed
  end
  local job = { task = spec, seed = run.seed, trials = prepare.seeded(run.opts.trials or prepare.trials(t), run.seed,
    -- An output of no more units than a sampled check draws is compared whole.
    ref.sample >= spec.total_units and "full" or run.opts.proof),
    timing = run.opts.timing ~= false, opts = {}, candidate = cand }
  -- The rules that may decide the hopeless rule from the timed correctness
  -- runs (none with the full proof: the old pipeline).
  job.correctness_stop = correctness_timing.choose(run.opts, run.opts.proof, job.timing)
  ref.cubin_path = write_temp(run.ref_cubin)
  job.reference = ref
  if run.base_cubin then
    local bp, berr = task_plan(t, "baseline", t.baseline.plan, t, run.arch, run.base_kernels)
    if bp then
      bp.cubin_path = write_temp(run.base_cubin)
      job.task.baseline.kernel = bp
    else
      run.baseline_error = berr
      run.result.baseline_error = tostring(berr)
    end
  end
  job.task.baseline.error = run.baseline_error
  if run.shipped_cubin then
    local sp, serr = task_plan(t, "shipped baseline", t.baseline.shipped.plan, t, run.arch, run.shipped_kernels)
    if sp then
      sp.cubin_path = write_temp(run.shipped_cubin)
      job.task.baseline.shipped.kernel = sp
    else
      run.shipped_error = serr
      run.result.shipped_baseline_error = tostring(serr)
    end
  end
  if job.task.baseline.shipped then job.task.baseline.shipped.error = run.shipped_error and tostring(run.shipped_error) end
  for k, v in pairs(run.opts.timing_opts or {}) do job.opts[k] = v end
  -- The full feedback profile only when asked for: the verdicts need few counters.
  job.opts.profile = run.opts.profile and true or nil
  job.opts.profiler_persistent = run.opts.profiler_persistent
  r.stages.plan.seconds = sys.now() - p0
  run.job = job
  return true
end

return M
