-- klab.experiment.results: what an experiment's store holds, read back:
-- a row per trajectory, PTXBench's cells, selections across trajectories,
-- and a stored turn as the entry a selection policy sees.
--
--   results.rows(exp), results.cells(exp), results.select(exp, policy [, by])
--   results.entry(trajectory, turn_row) -> {trajectory=, model=, task=, tag=, replica=, turn=, verdict=, ...}

local records = require "klab.store.records"
local policy = require "klab.experiment.policy"

local M = {}

function M.entry(t, tr)
  return {
    trajectory = t.id, model = t.model.name, task = t.group.name, tag = t.tag, replica = t.replica, turn = tr.turn,
    verdict = tr.verdict, reason = tr.reason, speedup = tr.speedup, candidate = tr.candidate,
    language = tr.language, verified = tr.verified == nil and nil or tr.verified == 1,
    workloads = tr.workloads and records.decode(nil, "turns", "workloads", tr.workloads, tr.id) or nil,
  }
end


-- One row per trajectory: {id, model, task, tag, replica, turns, state, stop_reason, verdicts = {...},
-- best_speedup, selected_turn, selected_speedup, tokens_in, tokens_out, cost}, in sweep order (so a
-- store merged from shards reads like one run), then any trajectories the spec does not name.
function M.rows(self)
  local db = self.db
  local exp = records.experiment(db, self.name)
  if not exp then return {} end
  local rows = records.trajectories_of(db, exp.id)
  local pos = {}
  for p, s in ipairs(self:_sweep()) do pos[s[5]] = p end
  table.sort(rows, function(a, b)
    local pa, pb = pos[a.key] or math.huge, pos[b.key] or math.huge
    if pa ~= pb then return pa < pb end
    return a.id < b.id
  end)
  for _, r in ipairs(rows) do
    r.verdicts = {}
    r.tokens_in, r.tokens_out, r.cost = 0, 0, nil
    for _, tr in ipairs(records.turn_costs(db, r.id)) do
      r.verdicts[#r.verdicts + 1] = tr.verdict
      r.tokens_in = r.tokens_in + (tr.input_tokens or 0)
      r.tokens_out = r.tokens_out + (tr.output_tokens or 0)
      if tr.cost_usd then r.cost = (r.cost or 0) + tr.cost_usd end
    end
    r.messages = nil
  end
  return rows
end

-- PTXBench's cells, per model and task, counted as the report counts them
-- (klab.report.metrics.success at the experiment's whole turn limit): n,
-- the trajectories that count (those with a result or finished), those
-- with a correct turn, those with a correct turn whose target instructions
-- were verified, the best speedup over correct turns, and the trajectories
-- left out (not_measured, unfinished). Rows {arch=, model=, task=, limit=,
-- n=, correct=, verified=, best=, not_measured=, unfinished=, ...}, sorted
-- by arch, model and task. A cell with n = 0 was not measured, not failed.
function M.cells(self)
  if not records.experiment(self.db, self.name) then return {} end
  local metrics = require "klab.report.metrics"
  local trajs = metrics.load(self.db, { experiment = self.name })
  -- A study in several languages: a cell per model, language and task.
  if self:_other_languages() then
    for _, tr in ipairs(trajs) do tr.model = tr.model .. " / " .. tostring(tr.language) end
  end
  return metrics.success(trajs, { limits = {} })
end

-- Best-of-N and other selections across trajectories: the turns of each
-- group (trajectories that share the fields in `by`, default model and
-- task, and language in a study of several) go to the policy. Returns rows {model=, task=, tag=, n=, turn=,
-- replica=, verdict=, speedup=, why=}.
function M.select(self, pol, by)
  pol = policy.resolve(pol)
  by = by or (self:_other_languages() and { "model", "task", "language" } or { "model", "task" })
  local db = self.db
  local exp = records.experiment(db, self.name)
  if not exp then return {} end
  local groups, order = {}, {}
  local group_of = {}
  for _, g in ipairs(self.groups) do group_of[g.name] = g end
  -- A turn's language is its candidate's; the condition is its trajectory's.
  local function field(tr, f)
    if f == "language" then return tr.trajectory_language end
    return tr[f]
  end
  for _, tr in ipairs(records.experiment_turns(db, exp.id)) do
    local parts = {}
    for _, f in ipairs(by) do parts[#parts + 1] = tostring(field(tr, f)) end
    local k = table.concat(parts, "\0")
    if not groups[k] then
      groups[k] = { entries = {}, row = {} }
      for _, f in ipairs(by) do groups[k].row[f] = field(tr, f) end
      order[#order + 1] = k
    end
    local e = M.entry({ id = tr.trajectory_id, model = { name = tr.model }, group = { name = tr.task }, tag = tr.tag,
      replica = tr.replica }, tr)
    table.insert(groups[k].entries, e)
  end
  local out = {}
  for _, k in ipairs(order) do
    local g = groups[k]
    local task_name = g.row.task or g.entries[1].task
    local ctx = self:_ctx(group_of[task_name] or self:_group(task_name))
    local sel, why = pol.select(g.entries, ctx)
    local row = g.row
    row.n = #g.entries
    if sel then
      row.turn, row.replica, row.tag, row.verdict, row.speedup = sel.turn, sel.replica, sel.tag, sel.verdict, sel.speedup
    else
      row.why = why
    end
    out[#out + 1] = row
  end
  if self.own_select_session then
    self.session:close()
    self.session, self.own_select_session = nil, nil
  end
  return out
end

return M
