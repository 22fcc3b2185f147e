-- klab.experiment.workloads: a candidate evaluated on a task group's
-- workloads, side by side in the experiment's evaluation session, and the
-- results summarized in the terms of feedback, tables and the store: one
-- verdict (the worst), the smallest speedup when every workload passed,
-- whether the targets were seen executing everywhere.
--
--   workloads.evaluate(exp, c, names, opts) -> {verdict=, reason=, speedup=, verified=, workloads={...}, compile_log=,
--                                              awaiting = true when every workload waits for its GPU stages}
--   workloads.start(exp, c, names, opts) -> job   workloads.finish(exp, job) -> the same result
--   workloads.axes_of(task)                 -> "M=128, N=4096" (a workload's dimensions)

local verdicts = require "klab.eval.verdict"
local task_mod = require "klab.task"

local M = {}

function M.axes_of(t)
  local parts = {}
  for _, d in ipairs(t.dim_order or {}) do parts[#parts + 1] = d .. "=" .. tostring(t.dims[d]) end
  return table.concat(parts, ", ")
end
local axes_of = M.axes_of

-- One workload's result, in the terms of feedback and tables.
local function summarize(name, r, speedup_field)
  local t = task_mod.get(name)
  local w = { name = name, axes = axes_of(t), verdict = r.verdict, reason = r.reason, cached = r.cached,
    awaiting = r.awaiting }
  local st = r.stages or {}
  local tm = st.timing
  if tm and tm.candidate then
    w.time_ms = tm.candidate.median and tm.candidate.median / 1000
    w.baseline_ms = tm.baseline and tm.baseline.median and tm.baseline.median / 1000
    w.speedup = tm[speedup_field or "speedup"] or tm.speedup
    w.speedup_tf32 = tm.speedup_tf32
  end
  local cor = st.correctness
  if cor and type(cor.outputs) == "table" then
    for _, cmp in pairs(cor.outputs) do
      if type(cmp) == "table" then
        if type(cmp.max_abs) == "number" then w.max_abs = math.max(w.max_abs or 0, cmp.max_abs) end
        if type(cmp.max_rel) == "number" then w.max_rel = math.max(w.max_rel or 0, cmp.max_rel) end
      end
    end
  end
  -- The instruction stage (klab.eval.profile.stage): {status = "ok"|"unknown", verified =, verdict =,
  -- families = {name = {status = "executed"|"not_executed"|"unknown"}}, text =}.
  local ins = st.instructions
  if type(ins) == "table" then
    local names, missing = {}, {}
    for name, f in pairs(type(ins.families) == "table" and ins.families or {}) do
      names[#names + 1] = name
      if type(f) == "table" and f.status == "not_executed" then missing[#missing + 1] = name end
    end
    table.sort(names)
    table.sort(missing)
    local status = "unknown"
    if ins.verified == true then status = "executed"
    elseif verdicts.target_missing(ins.verdict) or #missing > 0 then status = "not_executed" end
    w.instructions = { status = status, families = names, missing = #missing > 0 and missing or nil }
  end
  if type(ins) == "table" and type(ins.text) == "string" then w.profile = ins.text end
  return w
end

-- Evaluates candidate c on the workloads, all submitted at once so that the
-- session's pool runs them side by side (builds on its CPU workers, the GPU
-- stages on every GPU); polls the model caller meanwhile so that requests
-- keep flowing.
function M.evaluate(self, c, workloads, opts) return M.finish(self, M.start(self, c, workloads, opts)) end

-- The same in two halves, so that many candidates are evaluated side by
-- side: start submits, finish waits for the results and summarizes.
function M.start(self, c, workloads, opts)
  local results = {}
  local tickets = {}
  for i, name in ipairs(workloads) do
    self:_check_signal()
    local o = opts
    if type(opts.trials) == "function" then
      o = {}
      for k, v in pairs(opts) do o[k] = v end
      o.trials = opts.trials(task_mod.get(name))
    end
    local ticket, err = self.session:submit(name, c, o)
    if ticket then
      tickets[ticket] = i
    else
      results[i] = verdicts.make("unknown", { kind = "start", message = tostring(err) })
      results[i].stages = {}
    end
  end
  return { results = results, tickets = tickets, workloads = workloads }
end

function M.finish(self, job)
  local results, tickets, workloads = job.results, job.tickets, job.workloads
  local ws = {}
  for ticket, i in pairs(tickets) do
    while not results[i] do
      results[i] = self.session:wait(ticket, self.caller and 0.05 or nil)
      if self.caller then
        for _, o in ipairs(self.caller:poll(0)) do self:_keep_outcome(o) end
      end
    end
  end
  for i, name in ipairs(workloads) do
    ws[i] = summarize(name, results[i], self.spec.speedup_field)
    -- Code that does not build or load fails the same way on every
    -- workload: it is reported once.
    if verdicts.not_loaded(results[i].verdict) then
      ws[i].axes = nil
      for j = #results, i + 1, -1 do results[j] = nil end
      break
    end
  end
  local v = verdicts.worst(table.unpack(ws))
  local speedup, verified = nil, nil
  if verdicts.passed(v) then
    for _, w in ipairs(ws) do
      if w.speedup then speedup = math.min(speedup or math.huge, w.speedup) else speedup = nil break end
    end
  end
  -- Verified: every workload saw its targets execute; not verified: one
  -- saw a target missing; otherwise (no instruction stage) nothing is said.
  local all_executed = #ws > 0
  for _, w in ipairs(ws) do
    local s = w.instructions and w.instructions.status
    if s == "not_executed" or verdicts.target_missing(w.verdict) then verified = false break end
    if s ~= "executed" then all_executed = false end
  end
  if verified == nil and all_executed then verified = true end
  local reason
  for _, w in ipairs(ws) do
    if w.verdict == v then reason = w.reason break end
  end
  if #ws > 1 and not verdicts.passed(v) then
    for _, w in ipairs(ws) do
      if w.verdict == v then reason = w.axes and ("[%s] %s"):format(w.axes, w.reason) or w.reason break end
    end
  end
  local compile_log = results[1] and results[1].stages and results[1].stages.build and results[1].stages.build.log
  -- Awaiting judgement: nothing found here, every workload's GPU stages to come.
  local awaiting = verdicts.undecided(v) and #ws > 0
  for _, w in ipairs(ws) do awaiting = awaiting and w.awaiting == true end
  return { verdict = v, reason = reason, speedup = speedup, verified = verified, workloads = ws,
           compile_log = compile_log, awaiting = awaiting or nil }
end

return M
