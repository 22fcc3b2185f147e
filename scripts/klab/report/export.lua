-- klab.report.export: training data from an experiment store.
--
--   local export = require "klab.report.export"
--   local records, summary = export.sft(db_or_path, {kind = "both", verified = false,
--                                                    min_speedup = nil, cap = nil, experiment = nil})
--   local n, summary = export.sft(db_or_path, {..., write = function(record) end})  -- streamed, in order
--   print(export.summary_text(summary))
--
-- Two record kinds, as PTXBench's SFT data:
--
--   generation: the task prompt -> a correct kernel. One per correct turn
--     (verdict passed) that has a reply.
--   repair: the task prompt, a failed attempt, the feedback it got, and the
--     repaired kernel. One per correct turn n > 1 whose previous turn n - 1
--     in the same trajectory failed (any verdict but passed) and has both a
--     reply and feedback.
--
-- Filters apply to the correct (generation) or repaired (repair) turn:
-- verified (its target instructions were seen executing, turns.verified =
-- 1), min_speedup (its speedup is above P; a turn with no speedup is
-- dropped), cap (at most N records per task and kind, keeping the fastest:
-- order speedup descending, no speedup last, then model, tag, replica,
-- turn). Records are written in the order kind (generation first), task,
-- then that order. Each record is one line of JSON with sorted keys.
--
-- Record fields (both kinds): kind, id (experiment/model/task/tag/replica/
-- turn), experiment, model, task, tag, replica, turn, arch, verdict,
-- speedup (absent when not timed), verified (true/false, absent when
-- unknown), candidate (content hash), kernel {language, code, plan},
-- prompt (the messages before the first reply), completion (the correct
-- reply), messages (prompt + the assistant turns: a ready chat transcript).
-- repair adds failed {turn, verdict, reason, reply, candidate} and
-- feedback (the text the model got after the failed attempt).

local metrics = require "klab.report.metrics"
local verdicts = require "klab.eval.verdict"

local records = require "klab.store.records"
local M = {}

M.KINDS = { generation = true, repair = true, both = true }

local function decode(s)
  if type(s) ~= "string" then return nil end
  local ok, v = pcall(require("klab.json").decode, s)
  return ok and v or nil
end

local function order(a, b)
  if a.task ~= b.task then return a.task < b.task end
  local sa, sb = a.speedup or -math.huge, b.speedup or -math.huge
  if sa ~= sb then return sa > sb end
  for _, f in ipairs { "model", "tag", "replica", "turn", "experiment" } do
    if a[f] ~= b[f] then return a[f] < b[f] end
  end
  return false
end

-- sft(db_or_path, opts) -> records, summary | nil, msg, code.
-- summary: {total, by_kind = {kind = n}, by_task = {task = {generation =, repair =}},
-- failures = {verdict = n} (the failed attempts of the repair records),
-- dropped = {verified =, min_speedup =, cap =}, tasks = {sorted names},
-- turns (the turns read), passed (those correct with a reply), not_result
-- (those with no result: unknown, request_error), why (when total is 0:
-- the reason, as a phrase)}. An experiment the store does not hold gives
-- nil, msg, "ENOTFOUND".
function M.sft(db_or_path, opts)
  opts = opts or {}
  local kind = opts.kind or "both"
  if not M.KINDS[kind] then error("export.sft: kind must be generation, repair or both", 2) end
  if opts.min_speedup ~= nil and type(opts.min_speedup) ~= "number" then error("export.sft: min_speedup must be a number", 2) end
  if opts.cap ~= nil and (math.type(opts.cap) ~= "integer" or opts.cap < 0) then
    error("export.sft: cap must be a non-negative integer", 2)
  end
  local report = require "klab.report"
  local db, err, code, owned = report.open_store(db_or_path)
  if not db then return nil, (err:gsub("^report: ", "export: ")), code end
  local ok, records, summary = pcall(function()
    if not records.has_table(db, "experiments") or records.count(db, "experiments") == 0 then
      error("export: this store holds no experiments (only evaluations, or nothing yet)", 0)
    end
    local bad = report.check_experiment(db, opts.experiment, type(db_or_path) == "string" and db_or_path or "the store")
    if bad then error({ code = "ENOTFOUND", msg = "export: " .. bad }, 0) end
    local arch_of = {}
    for _, r in ipairs(records.report_trajectories(db, opts.experiment)) do arch_of[r.id] = metrics.arch_of(db, r) end
    -- First pass: which records there are, light (keys, no text); the
    -- records themselves are built one at a time in their order, so that
    -- memory does not grow with the store.
    local trajs = records.export_trajectories(db, opts.experiment, { messages = false })
    local pending = { generation = {}, repair = {} }
    local dropped = { verified = 0, min_speedup = 0, cap = 0 }
    local nturns, npassed, nnot = 0, 0, 0
    for _, tr in ipairs(trajs) do
      local turns = records.turns_with_code(db, tr.id)
      local prev
      for _, tu in ipairs(turns) do
        nturns = nturns + 1
        if metrics.NOT_RESULT[tu.verdict] then nnot = nnot + 1 end
        if verdicts.passed(tu.verdict) and tu.reply then npassed = npassed + 1 end
        if verdicts.passed(tu.verdict) and tu.reply then
          local keep = true
          if opts.verified and tu.verified ~= 1 then keep = false dropped.verified = dropped.verified + 1 end
          if keep and opts.min_speedup and not (tu.speedup and tu.speedup > opts.min_speedup) then
            keep = false
            dropped.min_speedup = dropped.min_speedup + 1
          end
          if keep then
            local function entry(kind)
              return { kind = kind, trajectory = tr, turn = tu.turn, task = tr.task, speedup = tu.speedup, model = tr.model,
                tag = tr.tag, replica = tr.replica, experiment = tr.experiment }
            end
            if kind ~= "repair" then table.insert(pending.generation, entry("generation")) end
            if kind ~= "generation" and prev and prev.turn == tu.turn - 1 and not verdicts.passed(prev.verdict)
                and prev.reply and prev.feedback then
              local e = entry("repair")
              e.failed_verdict = prev.verdict
              table.insert(pending.repair, e)
            end
          end
        end
        prev = tu
      end
    end
    local chosen = {}
    local s = { by_kind = { generation = 0, repair = 0 }, by_task = {}, failures = {}, dropped = dropped, tasks = {} }
    for _, k in ipairs { "generation", "repair" } do
      local list = pending[k]
      table.sort(list, order)
      local per = {}
      for _, r in ipairs(list) do
        per[r.task] = (per[r.task] or 0) + 1
        if opts.cap and per[r.task] > opts.cap then
          dropped.cap = dropped.cap + 1
        else
          chosen[#chosen + 1] = r
          s.by_kind[k] = s.by_kind[k] + 1
          if not s.by_task[r.task] then
            s.by_task[r.task] = { generation = 0, repair = 0 }
            s.tasks[#s.tasks + 1] = r.task
          end
          s.by_task[r.task][k] = s.by_task[r.task][k] + 1
          if k == "repair" then s.failures[r.failed_verdict] = (s.failures[r.failed_verdict] or 0) + 1 end
        end
      end
    end
    table.sort(s.tasks)
    s.total = #chosen
    s.turns, s.passed, s.not_result = nturns, npassed, nnot
    if s.total == 0 then s.why = M.why_none(s, opts) end
    -- Second pass: each record whole, from its trajectory's turns (the last
    -- trajectory's kept: a trajectory's records are often neighbours).
    local cur_id, cur_turns, cur_prompt
    local function build(e)
      local tr = e.trajectory
      if cur_id ~= tr.id or not cur_turns[e.turn] or (e.kind == "repair" and not cur_turns[e.turn - 1]) then
        if cur_id ~= tr.id then
          local mok, m = pcall(records.trajectory_messages, db, tr.id)
          cur_prompt = mok and m or {}
        end
        cur_id, cur_turns = tr.id, {}
        for _, tu in ipairs(records.turns_with_code(db, tr.id, e.turn - 1, e.turn)) do cur_turns[tu.turn] = tu end
      end
      local tu, prompt = cur_turns[e.turn], cur_prompt
      local base = {
        experiment = tr.experiment, model = tr.model, task = tr.task, tag = tr.tag, replica = tr.replica,
        turn = tu.turn, arch = arch_of[tr.id], verdict = tu.verdict, speedup = tu.speedup,
        candidate = tu.candidate,
        kernel = tu.k_code and { language = tu.k_language, code = tu.k_code, plan = tu.k_plan } or nil,
        prompt = prompt, completion = tu.reply, kind = e.kind,
      }
      if tu.verified ~= nil then base.verified = tu.verified == 1 end
      base.id = ("%s/%s/%s/%s/%d/%d"):format(tr.experiment, tr.model, tr.task, tr.tag, tr.replica, tu.turn)
      local msgs = {}
      for i, m in ipairs(prompt) do msgs[i] = m end
      if e.kind == "repair" then
        local prev = cur_turns[e.turn - 1]
        base.failed = { turn = prev.turn, verdict = prev.verdict, reason = prev.reason, reply = prev.reply,
          candidate = prev.candidate }
        base.feedback = prev.feedback
        msgs[#msgs + 1] = { role = "assistant", content = prev.reply }
        msgs[#msgs + 1] = { role = "user", content = prev.feedback }
      end
      msgs[#msgs + 1] = { role = "assistant", content = tu.reply }
      base.messages = msgs
      return base
    end
    if opts.write then
      for _, e in ipairs(chosen) do opts.write(build(e)) end
      return s.total, s
    end
    local out = {}
    for i, e in ipairs(chosen) do out[i] = build(e) end
    return out, s
  end)
  if owned then db:close() end
  if not ok then
    if require("klab.errors").is(records, "mistake") then return nil, records.message, "EINVAL" end
    if type(records) == "table" then return nil, records.msg, records.code end
    return nil, tostring(records), "EEXPORT"
  end
  return records, summary
end

-- why_none(summary, opts) -> why an export has no records, as a phrase.
function M.why_none(s, opts)
  local scope = opts.experiment and ("experiment %s"):format(opts.experiment) or "the store"
  if s.turns == 0 then return scope .. " has no turns" end
  if s.passed == 0 then
    if s.not_result == s.turns then
      return ("%s has %d turns and none was measured (verdict unknown or request_error: no GPU results or no reply "
        .. "from the model)"):format(scope, s.turns)
    end
    return ("%s has %d turns, none passed%s"):format(scope, s.turns,
      s.not_result > 0 and (" (%d were not measured)"):format(s.not_result) or "")
  end
  local d = s.dropped
  if d.verified + d.min_speedup + d.cap > 0 then
    return ("%s has %d correct turns; the filters dropped all of them"):format(scope, s.passed)
  end
  if opts.kind == "repair" then
    return ("%s has %d correct turns, none right after a failed turn with feedback (what a repair record needs)")
      :format(scope, s.passed)
  end
  return ("%s has %d correct turns, none usable"):format(scope, s.passed)
end

-- summary_text(summary) -> lines: records per task and kind, the failure
-- kinds that the repair records start from, and what the filters dropped.
function M.summary_text(s)
  local lines = {}
  if s.total == 0 then
    lines[1] = ("0 records: %s"):format(require("klab.report.escape").terminal(s.why or "nothing to export"))
    local d = s.dropped
    if d.verified + d.min_speedup + d.cap > 0 then
      lines[2] = ("dropped: %d not verified, %d at or below the minimum speedup, %d over the per-task cap"):format(
        d.verified, d.min_speedup, d.cap)
    end
    return table.concat(lines, "\n")
  end
  lines[#lines + 1] = ("%d records: %d generation, %d repair"):format(s.total, s.by_kind.generation, s.by_kind.repair)
  -- Task names come from the store: any length (padded here, as string.format
  -- takes no width past 99), shown with their control characters escaped.
  local term = require("klab.report.escape").terminal
  local w = 4
  for _, t in ipairs(s.tasks) do w = math.max(w, #term(t)) end
  local function pad(x) return x .. (" "):rep(w - #x) end
  lines[#lines + 1] = ("  %s  %10s  %6s  %6s"):format(pad("task"), "generation", "repair", "share")
  for _, t in ipairs(s.tasks) do
    local c = s.by_task[t]
    local n = c.generation + c.repair
    lines[#lines + 1] = ("  %s  %10d  %6d  %5.1f%%"):format(pad(term(t)), c.generation, c.repair,
      s.total > 0 and n / s.total * 100 or 0)
  end
  local fk = {}
  for v in pairs(s.failures) do fk[#fk + 1] = v end
  table.sort(fk)
  if #fk > 0 then
    local parts = {}
    for _, v in ipairs(fk) do parts[#parts + 1] = ("%s %d"):format(v, s.failures[v]) end
    lines[#lines + 1] = "repair records by the failure they repair: " .. table.concat(parts, ", ")
  end
  local d = s.dropped
  if d.verified + d.min_speedup + d.cap > 0 then
    lines[#lines + 1] = ("dropped: %d not verified, %d at or below the minimum speedup, %d over the per-task cap"):format(
      d.verified, d.min_speedup, d.cap)
  end
  return table.concat(lines, "\n")
end

return M
