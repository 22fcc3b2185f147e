-- klab judge: the second phase of a study, on the machine with the GPUs.
--
--   klab judge DB [--experiment NAME]... [--continue key=value...] [--again] [options]
local M = {}

M.summary = "judge the stored candidates of a study's generate phase on this machine's GPUs"

local USAGE = [[
usage: klab judge DB [options]
       klab judge DB --continue models=NAME [base_url=URL api_key_env=VAR ...] turns=N replicas=N [options]

A sweep run where no GPU is visible (or with phase=generate) asks each
trajectory's first turn, builds and plan-checks its candidate, and stores
it awaiting judgement. `klab judge` runs the GPU stages of every such turn
in DB through this machine's GPUs (one worker per GPU, builds on the CPU
cores meanwhile), stores each verdict with the feedback the model would
have had, and finishes the trajectories that end there. A turn that
cannot be measured here either (no GPU) keeps waiting.

Options:
  --experiment NAME judge this experiment of DB (repeatable; default: every
                    experiment DB holds)
  --continue        then go on with the repair turns, with the models, as the
                    experiment's script would. The models and where they are
                    (models=, provider=, base_url=, api_key_env=, sampling),
                    turns=, replicas= and mode= come from this command line,
                    never from the store: klab compares them with the study's
                    stored condition and stops (exit 2), naming the field,
                    when they differ. Where the GPU stages cannot run, no
                    model is asked (exit 3)
  --again           also judge every turn judged before; a turn judged on
                    another GPU model or driver gets a new evaluation, and the
                    store keeps both (an evaluation this machine already made
                    answers from the store)
  --gpus N|all      GPUs to use (default: all visible)
  --per-gpu N       workers per GPU (default 1)
  --cpu N           CPU workers for compiles and plans (default: the cores
                    less one, at most 8)
  --deadline S      kill a worker after S seconds on one candidate (default 180)
  --tasks DIR       also look for tasks in DIR (repeatable)
  --json            print each experiment's summary as one JSON object
  -h, --help        print this help

A store's config is data: its deadlines, budgets, paths and endpoints are
never used (--deadline and the options above are), its counts are checked
against klab's limits, and its task names are resolved as task names.

Exit status 0 when every turn that awaited judgement was judged (or none
did), 3 when turns await judgement and none could be measured here (no GPU),
or when --continue could not go on because the GPU stages cannot run here.
]]

local command = require "klab.command"
USAGE = USAGE .. "\n" .. command.EXIT_TEXT

local OPTIONS = {
  ["--experiment"] = "list", ["--continue"] = "flag", ["--again"] = "flag", ["--json"] = "flag",
  ["--tasks"] = "list", ["--per-gpu"] = "count", ["--cpu"] = "count0", ["--deadline"] = "seconds",
  ["--gpus"] = function(v, o)
    o.gpus = v == "all" and v or command.count(v, "--gpus", 1)
    if not o.gpus then return "--gpus needs a number of GPUs or 'all', not '" .. v .. "'" end
  end,
}

local function fail(msg, code) return command.fail("judge", msg, code) end

-- The settings of --continue besides the model options (klab.experiment.options).
local CONTINUE_OPTIONS = {
  { "turns", 0, "the study's turns per trajectory (required: compared with the store's)" },
  { "replicas", 0, "the study's replicas (required: compared with the store's)" },
  { "mode", "record-missing", "live, record-missing or replay" },
}

-- The models and counts --continue goes on with, from key=value settings;
-- a mistake is raised (klab.errors "mistake"). klab slurm checks a judge
-- array's settings with it before submitting.
function M.continue_settings(settings)
  local options_mod = require "klab.experiment.options"
  local v = options_mod.options(options_mod.with_model_options(CONTINUE_OPTIONS), settings, "judge")
  local models = options_mod.models_from(v, "judge")
  for _, k in ipairs { "turns", "replicas" } do
    if v[k] <= 0 then
      require("klab.errors").raise("mistake", ("judge: %s=N is missing: --continue compares the study's %s with the store's")
        :format(k, k))
    end
  end
  return { models = models, turns = v.turns, replicas = v.replicas, mode = v.mode }
end

function M.main(args)
  local o, code = command.parsed("judge", USAGE, command.options(args, OPTIONS))
  if not o then return code end
  local settings = {}
  for i = #o.positional, 2, -1 do
    if o.positional[i]:find("=", 1, true) then table.insert(settings, 1, table.remove(o.positional, i)) end
  end
  if #o.positional ~= 1 then return command.usage_error("judge", "expected one store, DB") end
  if #settings > 0 and not o.continue then
    return command.usage_error("judge", ("%s: model settings go with --continue"):format(settings[1]))
  end
  require("klab.task").use_path(o.tasks)
  local records = require "klab.store.records"
  local experiment = require "klab.experiment"
  -- What the study is continued with: the user's, compared with the store's.
  local user = o.continue and M.continue_settings(settings) or nil
  local fs = require "klab.fs"
  local path = o.positional[1]
  if fs.type(path) ~= "file" then return fail(("no store at %s"):format(path), command.EXIT.usage) end
  local db, derr = records.open(path)
  if not db then return fail(derr, command.EXIT.usage) end
  local names = o.experiment or records.experiment_names(db)
  if #names == 0 then
    db:close()
    return fail(("%s holds no experiment"):format(path), command.EXIT.usage)
  end
  local session = require("klab.eval").session { db = db, deadline = o.deadline, gpus = o.gpus or "all",
    per_gpu = o.per_gpu, cpu = o.cpu or require("klab.eval.pool").default_cpu() }
  local judged, unjudged, why, not_continued = 0, 0, nil, nil
  local ok, err = pcall(function()
    for _, name in ipairs(names) do
      local exp = experiment.from_store(db, name, { session = session, progress = o.json and false or nil,
        user = user })
      local r = exp:judge { again = o.again, continue = o.continue }
      not_continued = not_continued or r.not_continued
      judged, unjudged = judged + r.judged, unjudged + r.unjudged
      why = why or r.why
      if o.json then
        print(require("klab.json").encode({ experiment = name, judged = r.judged, unjudged = r.unjudged, why = r.why,
          awaiting = r.awaiting, counts = r.counts, new_turns = r.run and r.run.new_turns or nil }))
      else
        local parts = {}
        for _, v in ipairs(require("klab.eval.verdict").NAMES) do
          if r.counts[v] then parts[#parts + 1] = v .. "=" .. r.counts[v] end
        end
        local shown = require("klab.report.escape").terminal
        print(shown(("%s: judged %d turn%s%s; %d trajector%s await%s judgement (%s)"):format(name, r.judged,
          r.judged == 1 and "" or "s", r.unjudged > 0 and (", %d could not be: %s"):format(r.unjudged, r.why) or "",
          r.awaiting, r.awaiting == 1 and "y" or "ies", r.awaiting == 1 and "s" or "", table.concat(parts, " "))))
        if r.run then print(shown(("%s: %d new turn%s"):format(name, r.run.new_turns, r.run.new_turns == 1 and "" or "s"))) end
        print(exp:table())
      end
    end
  end)
  session:close()
  db:close()
  if not ok then error(err, 0) end
  if not_continued then
    return fail(("no repair turn was asked of any model: %s"):format(not_continued), command.EXIT.could_not_run)
  end
  if judged == 0 and unjudged > 0 then
    return fail(("nothing could be judged here: %s"):format(tostring(why)), command.EXIT.could_not_run)
  end
  return command.EXIT.ok
end

return M
