-- klab.eval.prepare: the stages of an evaluation that run in the calling
-- process (build and plan), and the job they prepare for the worker.
--
--   prepare.build(run)  -> true | nil (run.result's verdict set)
--   prepare.plan(run)   -> true | nil (run.result's verdict set)
--   prepare.finish(run) collects the static SASS census the build started
--   prepare.spec(task)  -> the plain description of a task the worker gets
--   prepare.trials(task)-> the correctness trials (seeds, distributions)
--   prepare.cleanup(run) removes the temporary cubin files of the job
--   prepare.task_source(path, code) -> the source klab compiles for a kernel a task ships
--
-- run = {task = klab.task descriptor, cand = klab.eval.candidate, arch =,
-- opts = evaluation options, result = {stages = {}}}; the stages fill
-- run.job (what klab.eval.gpu.run takes) and run.census.
--
-- Nothing here names a task family: a task brings its reference (kernels
-- and plans, compiled and planned here like a candidate's) and its baseline
-- (a library operation the worker's klab.eval.baselines.<lib> runs, or a
-- kernel the task ships, compiled and planned here too).

local jit = require "klab.jit"
local plan_mod = require "klab.eval.plan"
local sass = require "klab.eval.sass"
local task_mod = require "klab.task"
local sys = require "klab.sys"
local seed_mod = require "klab.eval.seed"
local verdicts = require "klab.eval.verdict"

local M = {}

-- Static SASS censuses by machine code (cubin hash and target families):
-- one nvdisasm run per cubin per process, whatever evaluates it again.
local CENSUS, CENSUS_N = {}, 0

-- A compiled image as a file for the worker (it reads and loads it).
local function write_temp(bytes)
  local path = assert(require("klab.fs").mkstemp("klab-cubin-"))
  assert(require("klab.fs").write(path, bytes))
  return path
end

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
    local tr = { scale = d.scale, tol_scale = d.tol_scale, label = "distribution " .. (d.name or i) }
    if d.inputs then
      tr.inputs = {}
      for name, init in pairs(d.inputs) do tr.inputs[name] = law(init) end
    end
    out[#out + 1] = tr
  end
  return out
end

-- The trials of an evaluation with seed s (text): each trial's seed derives
-- from it and the trial's place, whatever seed a caller's trial named.
function M.seeded(trials, s)
  local n = seed_mod.parse(s)
  local out = {}
  for i, tr in ipairs(trials) do
    local c = {}
    for k, v in pairs(tr) do c[k] = v end
    c.seed = seed_mod.format(seed_mod.derive(n, "trial", i))
    out[i] = c
  end
  return out
end

-- ---- build ----------------------------------------------------------------

-- A kernel the task ships (its reference, a shipped baseline): compiled
-- after klab's prelude, named by its file so that a compile error points
-- at it. Cached by content like every compile.
function M.task_source(path, code)
  return require("klab.judge").prelude() .. "\n#line 1 \"" .. path .. "\"\n" .. code
end

local function compile_task_kernel(what, path, code, arch)
  local src = M.task_source(path, code)
  local res, err, code_, partial = jit.compile { source = src, lang = "cuda", arch = arch, name = path }
  if not res then
    local line = first_error_line(partial and partial.log) or err
    return nil, string.format("the task's %s (%s) does not compile for %s: %s", what, path, arch, tostring(line))
  end
  return res
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

-- The candidate's code (when the run has one).
local function build_candidate(run)
  local t, c, r = run.task, run.cand, run.result
  -- Each language's front end (docs/languages.md).
  local res, err, code, partial = require("klab.lang").compile(run)
  if not res then
    r.stages.build = { ok = false, log = partial and partial.log or err, code = code }
    if code == "EPLAN" then
      verdicts.give(r, "plan_error", { message = tostring(err) })
    elseif code == "EUNSUPPORTED" then
      -- The machine, not the candidate: its compiler cannot be confined here.
      verdicts.give(r, "unknown", { message = tostring(err) })
    elseif code == "EREJECT" then
      verdicts.give(r, "compile_error", { kind = "rejected", message = tostring(err) })
    elseif tostring(err):find(" is not allowed: ", 1, true) then
      -- klab's rule, already one line naming the user's file.
      verdicts.give(r, "compile_error", { kind = "compiler", message = tostring(err) })
    else
      verdicts.give(r, "compile_error", { kind = "compiler",
        message = tostring(first_error_line(partial and partial.log) or err) })
    end
    return nil
  end
  r.stages.build = {
    ok = true, kernels = res.kernels, census = res.census, compile_ms = res.compile_ms, cached = res.cached,
    hash = res.hash, cubin_hash = res.cubin_hash, log = res.log, compiler = res.compiler,
    confinement = res.confinement, language = c.lang, triton = res.triton, cutlass = res.cutlass,
  }
  -- A CPU worker leaves the census to the process that schedules the GPU
  -- stages, so that it runs while they do rather than before them.
  if not run.opts.census_later then M.census_start(run, res.cubin) end
  run.cubin = res.cubin
  run.kernels = res.kernels
  return true
end

function M.build(run)
  local t, r = run.task, run.result
  local b0 = sys.now()
  if run.cand and not build_candidate(run) then return nil end
  r.stages.build = r.stages.build or { ok = true }
  -- The task's own kernels: a task that cannot build them cannot judge.
  local ref, rerr = compile_task_kernel("reference", t.reference.path, t.reference.code, run.arch)
  if not ref then
    -- A mistake in the task's inputs, not a failure to run: said as such.
    r.task_error = tostring(rerr)
    verdicts.give(r, "unknown", { message = tostring(rerr) })
    return nil
  end
  run.ref_cubin, run.ref_kernels = ref.cubin, ref.kernels
  if t.baseline.kind == "shipped" then
    local base, berr = compile_task_kernel("baseline kernel", t.baseline.path, t.baseline.code, run.arch)
    if not base then
      -- No baseline is no speedup, not a wrong candidate; the result says
      -- the task's baseline is broken.
      run.baseline_error = berr
      r.baseline_error = tostring(berr)
    else
      run.base_cubin, run.base_kernels = base.cubin, base.kernels
    end
  elseif t.baseline.shipped then
    -- A kernel beside the library's: one that does not build is the
    -- task's mistake, said as such; the library's baseline still stands.
    local sh = t.baseline.shipped
    local alt, aerr = compile_task_kernel("shipped baseline kernel", sh.path, sh.code, run.arch)
    if alt then run.shipped_cubin, run.shipped_kernels = alt.cubin, alt.kernels else
      run.shipped_error = aerr
      r.shipped_baseline_error = tostring(aerr)
    end
  end
  r.stages.build.seconds = sys.now() - b0
  return true
end

-- ---- plan -----------------------------------------------------------------

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
function M.misfit(plan, kernels)
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
  local d = p and M.misfit(p, kernels)
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
  local misfit = M.misfit(plan, run.kernels)
  if misfit then
    verdicts.give(r, "plan_error", misfit)
    return nil
  end
  local globals = jit.globals(run.cubin)
  return { cubin_path = write_temp(run.cubin), launches = plan.launches,
    tensormaps = next(plan.tensormaps or {}) and plan.tensormaps or nil,
    workspace = next(plan.workspace or {}) and plan.workspace or nil,
    globals = globals and next(globals) and globals or nil }
end

function M.plan(run)
  local t, r = run.task, run.result
  local p0 = sys.now()
  local cand
  if run.cand then
    cand = plan_candidate(run)
    if not cand then return nil end
  end
  r.stages.plan = r.stages.plan or {}
  local spec = M.spec(t)
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
  local job = { task = spec, seed = run.seed, trials = M.seeded(run.opts.trials or M.trials(t), run.seed),
    timing = run.opts.timing ~= false, opts = {}, candidate = cand }
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
  for _, k in ipairs { "trials", "timing", "timing_opts", "cache", "profile", "profiler_persistent", "seed" } do
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
  local ok = M.build(run) and M.plan(run)
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
