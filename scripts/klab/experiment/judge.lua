-- klab.experiment.judge: the second phase of a study. A generate phase
-- (klab.experiment, phase "generate") stores each trajectory's candidate
-- built and plan-checked, awaiting its GPU stages; judging runs them on
-- the machine that has the GPUs (klab judge), stores each turn's verdict
-- with the feedback the model would have had, and finishes the
-- trajectories that end there. With continue, the repair turns follow.
--
--   judge.judge(exp, {again =, continue =}) -> {judged=, unjudged=, why=, counts=, awaiting=, trajectories=, run=}
--   judge.turns(exp, trajs, again [, bar])  -> turns judged, turns that could not be, why not
--   judge.awaiting(t)                       -> whether trajectory t's last turn awaits judgement

local records = require "klab.store.records"
local candidate_mod = require "klab.eval.candidate"
local workloads_mod = require "klab.experiment.workloads"
local progress = require "klab.progress"
local errors = require "klab.errors"
local verdicts = require "klab.eval.verdict"

local M = {}

function M.awaiting(t)
  local last = t.turns[#t.turns]
  return last ~= nil and last.awaiting == 1
end
local awaiting = M.awaiting

-- Runs the GPU stages of the turns that await them (again: of every turn
-- with a candidate, answered from the store where this machine measured it
-- already), all submitted at once so that the pool runs them side by side;
-- stores each verdict with its feedback and finishes the trajectories that
-- end there. A turn that could not be measured here either (no GPU) waits
-- on. Returns the turns judged, those that could not be, and why not.
function M.turns(self, trajs, again, bar)
  local pending = {}
  local judged, unjudged, why = 0, 0, nil
  for _, t in ipairs(trajs) do
    for k, tr in ipairs(t.turns) do
      if tr.awaiting == 1 or (again and tr.candidate) then
        local row = tr.candidate and records.candidate(self.db, tr.candidate)
        if row then
          local c = assert(candidate_mod.new { code = row.code, lang = row.language, plan = row.plan,
            name = ("%s-t%d"):format(t.group.name:gsub("[^%w_]", "_"), tr.turn), source = row.source })
          pending[#pending + 1] = { t = t, k = k, tr = tr,
            job = workloads_mod.start(self, c, self:_workloads(t.group), self:_eval_opts(tr.turn)) }
        end
      end
    end
  end
  for i, p in ipairs(pending) do
    self:_check_signal()
    local res = workloads_mod.finish(self, p.job)
    local rec = {}
    self:_judged(rec, res, p.t, p.tr.turn)
    if not verdicts.measured(res.verdict) then
      -- Nothing measured here either (no GPU, no driver): the turn waits on.
      unjudged, why = unjudged + 1, why or res.reason
    elseif not res.awaiting then
      judged = judged + 1
      rec.feedback = self:_feedback(res, p.tr.turn)
      self.db:transaction(function() p.t.turns[p.k] = records.judge_turn(self.db, p.tr.id, rec) end)
      self:_count(p.tr.verdict, rec.verdict)
      self:_log("judged %s %s %s r%d t%d: %s", p.t.model.name, p.t.group.name, p.t.tag, p.t.replica, p.tr.turn,
        rec.reason or rec.verdict)
      if p.k == #p.t.turns and not p.t.done then
        local stop = self:_stop_reason(p.t)
        if stop then self.db:transaction(function() self:_finish_trajectory(p.t, stop) end) end
      end
    end
    if bar then bar:update { done = i, counts = self:_counts() } end
  end
  return judged, unjudged, why
end

-- Why the repair turns cannot go on here (nil when they can): no GPU
-- stage runs on this machine, or a turn could not be measured; a repair
-- turn after either would feed the model "not evaluated".
local function cannot_continue(self, unjudged, why)
  local m = self.session.machine and self.session:machine()
  if m and m.none then
    return ("the GPU stages cannot run here (%s)"):format(tostring(m.none))
  end
  if unjudged > 0 then return ("%d turn%s could not be judged here (%s)"):format(unjudged, unjudged == 1 and "" or "s",
    tostring(why)) end
  return nil
end

-- klab judge: the GPU stages of every turn of this experiment (its shard)
-- that awaits them; opts = {again = true: every stored candidate again,
-- continue = true: then the repair turns, with the models (run)}. Returns
-- {judged=, counts=, awaiting=} (and run's summary as .run with continue;
-- .not_continued, why no model was asked, where the GPU stages cannot run).
function M.judge(self, opts)
  opts = opts or {}
  -- A tool-calling study's trajectory ends at a submission that awaits
  -- judgement; its script, not a repair turn, goes on (klab.agent.study).
  if opts.continue and self.stored and self.stored.config.policy == "tools" then
    errors.raise("mistake", ("experiment %s is a tool-calling study: klab judge stores its submissions' verdicts; "
      .. "--continue asks repair turns, which it has none of (run klab judge without --continue)"):format(self.name))
  end
  if opts.continue and not self.continuable then
    errors.raise("mistake", ("experiment %s: continuing a stored study needs the models, turns, replicas and mode "
      .. "from the command line, not from the store (klab judge DB --continue models=... turns=... replicas=...)")
      :format(self.name))
  end
  local lock = self:_lock()
  local sys = require "klab.sys"
  sys.trap("INT", "TERM")
  local ok, res = pcall(function()
    local db = self.db
    local exp = records.experiment(db, self.name)
    if not exp then
      errors.raise("mistake", ("klab judge: %s holds no experiment named %s"):format(db:path() or "the store", self.name))
    end
    self.exp_id = exp.id
    local trajs = db:transaction(function() return self:_trajectories() end)
    local spec = self.spec
    local pool = spec.pool or {}
    local own = not spec.session
    self.session = spec.session or require("klab.eval").session { db = db, deadline = spec.eval and spec.eval.deadline,
      gpus = pool.gpus, per_gpu = pool.per_gpu, cpu = pool.cpu or require("klab.eval.pool").default_cpu() }
    local n = 0
    for _, t in ipairs(trajs) do
      for _, tr in ipairs(t.turns) do if tr.awaiting == 1 or (opts.again and tr.candidate) then n = n + 1 end end
    end
    local bar = progress.new { total = n, label = self.name .. ": judged", mode = spec.progress == nil and "auto" or
      spec.progress }
    local judged, unjudged, why = M.turns(self, trajs, opts.again, bar)
    bar:finish()
    local stop = opts.continue and cannot_continue(self, unjudged, why) or nil
    if own then self.session:close() end
    self.session = nil
    local left = 0
    for _, t in ipairs(trajs) do if awaiting(t) then left = left + 1 end end
    return { judged = judged, unjudged = unjudged, why = why, counts = self:_counts(), awaiting = left,
             trajectories = #trajs, not_continued = stop }
  end)
  sys.untrap()
  if lock then lock:free() end
  if not ok then error(res, 0) end
  if opts.continue and not res.not_continued then
    self.phase = "full"
    res.run = self:run()
  end
  return res
end

return M
