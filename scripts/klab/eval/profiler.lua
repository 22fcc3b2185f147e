-- klab.eval.profiler: the evaluation's instruction stage. One profiled
-- region (never timed) around the planned launches, through klab.prof's
-- CUPTI Range Profiler, with the few counters the verdicts need (or the
-- whole table for a feedback profile); what was measured is judged by the
-- rules of klab.eval.profile (docs/profile.md).
--
--   profiler.stage(ctx, run, task, arch, opts)  -> stage table (never raises); see M.stage below
--   profiler.verdict_metrics(rows), profiler.verdict_first_metrics(rows),
--   profiler.verdict_deferred_metrics(rows), profiler.verdict_simt_metrics(rows)
--                                               -> the metric names of the verdict set and its parts

local ok_c, C = pcall(require, "klab.prof")
if not ok_c then C = nil end
local profile = require("klab.eval.profile")
local sass = require("klab.eval.sass")
local sys = require("klab.sys")
local now = sys.now

local M = {}

-- Worker-lifetime state: one profiler per context and metric set (a
-- failure to create one is kept, not retried), and one L2-flush function
-- per context.

-- A flush function for ctx: the judge's kernels read a buffer of twice the
-- L2 through it, then wait. (fn holds its buffer alive.)
local function l2_reader(ctx, judge, props)
  local bytes = 2 * props.l2_bytes
  local buf = ctx:alloc(bytes)
  if not buf then return nil end
  buf:fill(0)
  return function()
    local ok, err, code = judge:l2_read(buf, bytes)
    if not ok then return nil, err, code end
    return ctx:sync()
  end
end

-- L2-flush function per context.
local profilers = setmetatable({}, { __mode = "k" })
local flushers = setmetatable({}, { __mode = "k" })

-- What the verdicts need (instruction families, FLOPs by path, the SIMT
-- arithmetic of the work rule): a few counters, so few replay passes. The
-- feedback profile (throughputs, occupancy, DRAM bytes, clocks) is the
-- whole table, collected only when asked for (opts.full).
--
-- The verdict set comes in three parts.
--  1. The instruction counts and the wgmma FLOPs: hardware counters, 2
--     passes on GH100 (prof.passes("GH100", ...), offline).
--  2. GH100 counts mma.sync FLOPs (flops.hmma) in counters that need 6
--     passes of their own. The instruction counts say whether any HMMA/IMMA
--     ran (inst.hmma, with the HFMA2.MMA of plain code taken out): when none
--     did, its FLOPs are 0 without measuring them, which is the case of
--     every wgmma and every SIMT kernel; when some did, this part is
--     collected too.
--  3. The SIMT arithmetic (ops.*), which CUPTI counts by patching the code
--     (prof.patched): one pass, but a compute-bound kernel runs it many
--     times slower (40x for the naive attention sample on the H200), and a
--     patched session cannot stay enabled from one candidate to the next.
--     Only the work rule reads it, so it is collected only for a task with
--     a work rule whose tensor FLOPs alone fall short of it; elsewhere
--     stage.parts.simt says why not.
local VERDICT_ROLES = { "^inst%.", "^flops%.", "^ops%." }
local DEFERRED_ROLES = { ["flops.hmma"] = "inst.hmma" }
local SIMT_ROLE = "^ops%."

local function role_metrics(rows, keep)
  rows = rows or (C and C.metric_table()) or {}
  local names, seen = {}, {}
  for _, r in ipairs(rows) do
    if keep(r.role) and not seen[r.name] then
      seen[r.name] = true
      names[#names + 1] = r.name
    end
  end
  return names
end

local function verdict_role(role)
  for _, pat in ipairs(VERDICT_ROLES) do
    if role:find(pat) then return true end
  end
  return false
end

-- Every metric the verdicts can use.
function M.verdict_metrics(rows) return role_metrics(rows, verdict_role) end

-- The first part: the verdict metrics less the other parts'.
function M.verdict_first_metrics(rows)
  return role_metrics(rows, function(role)
    return verdict_role(role) and not DEFERRED_ROLES[role] and not role:find(SIMT_ROLE)
  end)
end

-- The second part: the deferred roles' metrics.
function M.verdict_deferred_metrics(rows)
  return role_metrics(rows, function(role) return DEFERRED_ROLES[role] ~= nil end)
end

-- The third part: the SIMT arithmetic.
function M.verdict_simt_metrics(rows)
  return role_metrics(rows, function(role) return role:find(SIMT_ROLE) ~= nil end)
end

local SETS = { verdict = M.verdict_first_metrics, deferred = M.verdict_deferred_metrics,
  simt = M.verdict_simt_metrics }

local function get_profiler(ctx, opts, set)
  if opts.profiler and not set then return opts.profiler end
  set = set or (opts.metrics and "given" or (opts.full and "full" or "verdict"))
  profilers[ctx] = profilers[ctx] or {}
  local e = profilers[ctx][set]
  if e then return e.p, e.err, e.code end
  if not C then
    e = { err = "klab.prof is not available", code = "ENOLIB" }
  else
    local metrics = set == "given" and opts.metrics or (SETS[set] and SETS[set]() or nil)
    local p, err, code = C.new(ctx, metrics and { metrics = metrics } or nil)
    e = { p = p, err = err, code = code }
  end
  profilers[ctx][set] = e
  return e.p, e.err, e.code
end

-- Whether the stage still needs the second part, after the first: a
-- deferred role the chip has counters for, whose instruction count is not
-- known to be 0. The others are set to 0 in roles and named in inferred.
local function settle_deferred(roles, inferred, chip)
  local has = {}
  for _, r in ipairs(profile.rows_for(profile.table_chip(chip))) do has[r.role] = true end
  local need = false
  for role, count_role in pairs(DEFERRED_ROLES) do
    if has[role] and roles[role] == nil then
      if roles[count_role] == 0 then
        roles[role] = 0
        inferred[role] = count_role .. " = 0: not collected"
      else
        need = true
      end
    end
  end
  return need
end

-- Whether the work rule needs the SIMT arithmetic: nil when it does, else
-- why not (no rule, or the tensor FLOPs alone reach it; the SIMT count can
-- only add to them).
local function simt_unneeded(roles, task, chip)
  if not task.work then return "the task has no work rule" end
  local fl = profile.flops(roles, task.flops, chip)
  if fl.tensor and fl.task and fl.tensor >= task.work * fl.task then
    return "the tensor FLOPs alone meet the work rule"
  end
  return nil
end

-- Measures one more part with p and adds it to the stage: values, passes
-- and phase seconds. nil, err, code when it failed.
local function measure_part(p, run, prepare, values, stage, part)
  local more, minfo, mcode = p:measure(run, prepare)
  if not more then return nil, minfo, mcode end
  for k, v in pairs(more) do values[k] = v end
  stage.passes = stage.passes + minfo.passes
  stage.parts[part] = minfo.passes
  for k, v in pairs(minfo.phase_seconds or {}) do
    stage.phase_seconds[k] = (stage.phase_seconds[k] or 0) + v
  end
  stage.roles = profile.aggregate(values, stage.chip)
  return true
end

local function first_launch_info(opts)
  local l = opts.launches and opts.launches[1]
  if not l then return {} end
  local info = {}
  local function prod(v)
    if type(v) == "number" then return v end
    local n = 1
    for _, x in ipairs(v or {}) do n = n * x end
    return n
  end
  info.threads = prod(l.block)
  info.blocks = prod(l.grid)
  info.dynamic_smem = l.shared or 0
  local attrs = opts.kernels and opts.kernels[l.kernel]
  if attrs then
    info.kernel = { name = l.kernel, registers = attrs.registers, static_smem = attrs.static_smem,
      local_bytes = attrs.local_bytes }
  end
  local fn = opts.funcs and opts.funcs[l.kernel]
  if fn and C then
    local b = C.occupancy(fn, info.threads, info.dynamic_smem)
    if b then info.blocks_per_sm = b end
  end
  return info
end

local function is_tensor_task(targets)
  for _, t in ipairs(targets or {}) do
    if profile.TENSOR_FAMILIES[t] then return true end
  end
  return false
end

local function static_census(stage, opts)
  if not (opts.cubin and C) then return nil end
  local sass, text, census = sass.static(opts.cubin, stage.targets)
  stage.sass = sass
  return text, census
end

local function stage_body(ctx, run, task, arch, opts, stage)
  stage.targets = (task.targets or {})[arch] or {}
  local text, census = static_census(stage, opts)

  local prof_ok, why, wcode = true, nil, nil
  if not C then prof_ok, why, wcode = false, "klab.prof is not available", "ENOLIB" end
  if prof_ok then
    local dev = 0
    if ctx ~= nil and type(ctx) == "userdata" then dev = ctx:device() end
    prof_ok, why, wcode = C.available(dev)
    if prof_ok and ctx == nil then prof_ok, why, wcode = false, "no GPU context", "EINVAL" end
  end
  local p, perr, pcode
  if prof_ok then
    p, perr, pcode = get_profiler(ctx, opts)
    if not p then prof_ok, why, wcode = false, perr, pcode end
  end
  if not prof_ok then
    stage.status, stage.reason, stage.code = "unknown", "profiling unavailable: " .. tostring(why), wcode
    stage.families = profile.families({}, stage.targets, nil)
    for _, f in pairs(stage.families) do f.status, f.reason = "unknown", stage.reason end
    profile.summarize(stage)
    return stage
  end

  local info0 = p:info()
  stage.chip = info0.chip
  stage.skipped = info0.skipped

  -- L2 is emptied before each pass (outside the range), as ncu's cache
  -- control does, so DRAM figures do not depend on what the previous pass
  -- left there. The flush READS twice the L2 size: a write (a memset) would
  -- leave L2 full of dirty lines that the profiled kernel then writes back,
  -- counted as its DRAM traffic and its time.
  local flush
  if opts.flush_l2 ~= false and opts.judge and opts.device and opts.device.l2_bytes and opts.device.l2_bytes > 0 then
    flush = flushers[ctx]
    if flush == nil then
      flush = l2_reader(ctx, opts.judge, opts.device) or false
      flushers[ctx] = flush
    end
  end
  local npass = 0
  local function prepare(pass)
    npass = pass
    if opts.prepare then
      local okp, perr2, pcode2 = opts.prepare(pass)
      if okp == nil or okp == false then return nil, perr2, pcode2 end
    end
    if flush then
      local okf, ferr, fcode = flush()
      if not okf then return nil, ferr, fcode end
    end
    return true
  end
  local function failed(why, code)
    stage.status, stage.reason, stage.code = "unknown", "profiling failed: " .. tostring(why), code
    stage.families = profile.families({}, stage.targets, stage.chip)
    for _, f in pairs(stage.families) do f.status, f.reason = "unknown", stage.reason end
    local sticky = ctx.sticky and ctx:sticky()
    if sticky then stage.sticky = sticky end
    profile.summarize(stage)
    return stage
  end
  -- With opts.persistent the range profiler stays enabled from one
  -- candidate to the next, so that its start is paid once per worker
  -- (docs/profile.md); otherwise it is enabled for this measurement only.
  C.persistent(opts.persistent == true)
  local values, minfo_or_err, mcode = p:measure(run, prepare)
  if not values then return failed(minfo_or_err, mcode) end
  stage.profiler_reused = minfo_or_err.reused
  stage.passes = minfo_or_err.passes
  stage.phase_seconds = minfo_or_err.phase_seconds
  stage.roles = profile.aggregate(values, stage.chip)
  -- The verdict set's second and third parts, only when the first cannot
  -- settle them.
  if not opts.profiler and not opts.metrics and not opts.full then
    stage.parts = { first = stage.passes }
    stage.inferred = {}
    if settle_deferred(stage.roles, stage.inferred, stage.chip) then
      stage.inferred = nil
      local p2, err2, code2 = get_profiler(ctx, opts, "deferred")
      if not p2 then return failed(err2, code2) end
      local ok2, merr2, mcode2 = measure_part(p2, run, prepare, values, stage, "hmma")
      if not ok2 then return failed(merr2, mcode2) end
    else
      stage.parts.hmma = "not measured: inst.hmma = 0"
    end
    if stage.inferred and next(stage.inferred) == nil then stage.inferred = nil end
    local why = simt_unneeded(stage.roles, task, stage.chip)
    if not why and #M.verdict_simt_metrics(profile.rows_for(profile.table_chip(stage.chip))) == 0 then
      why = "no SIMT arithmetic counters on " .. tostring(stage.chip)
    end
    if why then
      stage.parts.simt = "not measured: " .. why
    else
      local p3, err3, code3 = get_profiler(ctx, opts, "simt")
      if not p3 then return failed(err3, code3) end
      local ok3, merr3, mcode3 = measure_part(p3, run, prepare, values, stage, "simt")
      if not ok3 then return failed(merr3, mcode3) end
    end
  end
  stage.status = "ok"
  stage.metrics = values
  stage.families = profile.families(stage.roles, stage.targets, stage.chip)
  stage.flops = profile.flops(stage.roles, task.flops, stage.chip)

  local info = first_launch_info(opts)
  info.sm_count = opts.device and opts.device.sm_count
  info.regs_per_sm = opts.device and opts.device.regs_per_sm
  info.task_bytes = task.bytes
  info.tensor_task = is_tensor_task(stage.targets)
  info.duration_us, info.duration_source = opts.duration_us, opts.duration_source
  stage.info = info
  profile.summarize(stage)

  stage.verdict, stage.verdict_detail = profile.work_verdict(stage, task.work)
  if not stage.verdict then stage.verdict, stage.verdict_detail = profile.verdict(stage, opts) end
  if not stage.verdict then
    stage.verdict, stage.verdict_detail = profile.type_verdict(stage, task.tensor_type, task.work)
  end
  if stage.verdict then stage.verdict_reason = require("klab.eval.verdict").reason(stage.verdict, stage.verdict_detail) end
  local all = #stage.targets > 0
  for _, f in pairs(stage.families) do
    if f.status ~= "executed" then all = false end
  end
  stage.verified = all and stage.verdict == nil

  sass.executed(stage, ctx, run, opts, text, census)
  return stage
end

-- The instruction stage. Never raises; returns
--   {status = "ok"|"unknown", reason=, code=, arch=, chip=, targets={...},
--    families = {wgmma = {status=, executed=, count=}, ...},
--    flops = {hgmma=, hmma=, utc=, tensor=, other=, task=, frac={...}},
--    metrics = {name = value}, roles = {...}, passes=, skipped = {name = why},
--    phase_seconds = {enable=, config=, prepare=, start=, run=, stop=, evaluate=, disable=},
--    inferred = {role = why} (roles set to 0 without collecting them),
--    parts = {first = passes, hmma = passes | "not measured: why", simt = passes | "not measured: why"}
--      (the verdict set's parts; absent for a full profile or given metrics),
--    profile = {...}, text =, verdict = "target_not_executed"|nil,
--    verdict_reason =, verified = bool (every target executed, no verdict),
--    sass = {available=, tool=, static={opcodes=,...}, static_families={...},
--            executed={opcodes=,...}|nil, reason=}, sticky=, seconds=}
-- ctx: klab.gpu Context; run(pass): the planned launches (return nil, msg
-- to fail); task: {targets = {arch = {...}}, flops =, bytes =}; opts:
--   prepare(pass)  restore inputs / poison outputs (outside the range)
--   launches, kernels (name -> fn:attributes()), funcs (name -> Function),
--   device (klab.gpu props: sm_count, l2_bytes, regs_per_sm), cubin (bytes,
--   for the static SASS census), sass_executed (bool: SASS-metrics pass,
--   off by default), judge (the klab.judge handle whose kernels read L2
--   away before each pass; without it no flush), flush_l2 (default true),
--   duration_us, profiler,
--   metrics, min_path_fraction, persistent (default false; true: keep the
--   range profiler enabled after the measurement; stage.profiler_reused
--   says whether this one found it enabled).
function M.stage(ctx, run, task, arch, opts)
  opts = opts or {}
  local t0 = now()
  local stage = { status = "unknown", arch = arch, verified = false }
  local ok, err = pcall(stage_body, ctx, run, task or {}, arch, opts, stage)
  if not ok then
    stage.status = "unknown"
    stage.reason = "profile stage failed: " .. tostring(err)
    stage.verdict, stage.verdict_reason, stage.verified = nil, nil, false
    stage.families = {}
    local targets = type(task) == "table" and type(task.targets) == "table" and task.targets[arch] or {}
    for _, name in ipairs(type(targets) == "table" and targets or {}) do
      stage.families[name] = { status = "unknown", reason = stage.reason }
    end
    pcall(profile.summarize, stage)
    pcall(function()
      local sticky = ctx and ctx.sticky and ctx:sticky()
      if sticky then stage.sticky = sticky end
    end)
  end
  stage.seconds = now() - t0
  return stage
end

return M
