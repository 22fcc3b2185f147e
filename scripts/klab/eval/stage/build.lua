-- The build stage (klab.eval.stages): the candidate compiled for the exact
-- target with limits (NVRTC for CUDA C++, ptxas for PTX), its log,
-- registers, spills, shared memory and PTX census kept, forbidden
-- constructs refused, and the static SASS census of its machine code
-- started (klab.eval.prepare collects it); then the task's own kernels,
-- its reference and a shipped baseline, compiled the same way. Fills
-- run.cubin, run.kernels and the task's images (run.ref_cubin, ...).

local jit = require "klab.jit"
local prepare = require "klab.eval.prepare"
local sys = require "klab.sys"
local verdicts = require "klab.eval.verdict"

local M = {}

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

local function compile_task_kernel(what, path, code, arch)
  local src = prepare.task_source(path, code)
  local res, err, code_, partial = jit.compile { source = src, lang = "cuda", arch = arch, name = path }
  if not res then
    local line = first_error_line(partial and partial.log) or err
    return nil, string.format("the task's %s (%s) does not compile for %s: %s", what, path, arch, tostring(line))
  end
  return res
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
    confinement = res.confinement, language = c.lang, triton = res.triton, cute_dsl = res.cute_dsl, cutlass = res.cutlass,
  }
  -- A CPU worker leaves the census to the process that schedules the GPU
  -- stages, so that it runs while they do rather than before them.
  if not run.opts.census_later then prepare.census_start(run, res.cubin) end
  run.cubin = res.cubin
  run.kernels = res.kernels
  return true
end

function M.run(run)
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

-- The build's measurements (klab.eval.stages declares them): the first
-- kernel's registers, the PTX census ("present in source") and the static
-- SASS census ("present in machine code"), which travel with every
-- evaluation that compiled.
function M.measurements(b, put)
  for name, n in pairs(b.sass and b.sass.families or {}) do
    put("sass_static_" .. (name:gsub("%.", "_")), n)
  end
  for fam, n in pairs(b.census or {}) do
    if fam ~= "instructions" then put("ptx_" .. (fam:gsub("[%.:]", "_")), n) end
  end
  if b.kernels and b.kernels[1] then put("registers", b.kernels[1].registers) end
end

return M
