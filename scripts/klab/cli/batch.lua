-- klab batch: evaluate many candidates, on every GPU of this host at once.
--
--   klab batch TASK DIR [options]        every candidate folder (or .cu/.ptx file) in DIR
--   klab batch LIST.jsonl [options]      one {"task": ..., "candidate": path} per line
local M = {}

M.summary = "evaluate many candidates at once: every GPU, compiles on the CPU cores, a progress bar"

local USAGE = [[
usage: klab batch TASK DIR [options]
       klab batch LIST.jsonl [options]

Evaluates every candidate in DIR on TASK (each entry of DIR that is a
candidate folder, or a .cu or .ptx file), or every line of LIST.jsonl, a
JSON object {"task": NAME, "candidate": PATH} per line (a relative PATH
is taken from the file's folder; an optional "seed": "0x..." gives that
evaluation's seed, as `klab eval --seed`). The candidates go through the same
pipeline as `klab eval`, several at once: one GPU worker per visible GPU,
compiles and plans on CPU workers meanwhile, so no GPU waits for a build.
Prints a header and one line per candidate, in the order given (one that
could not be evaluated says so in place of its verdict), then the verdict
counts and the evaluations per minute; --json prints each result whole.
Exit status 0 when the candidates were judged, whatever their verdicts; 2
for a task or file that does not exist (before anything runs); 3 when none
could be evaluated (no GPU).

Options:
  --db FILE         record every result in this store (and answer from it)
  --gpus N|all      GPUs to use (default: all visible)
  --per-gpu N       workers per GPU (default 1; more share its exclusive
                    stages, instructions and timing, in turn)
  --cpu N           CPU workers for compiles and plans (default: the cores
                    less one, at most 8)
  --budget S        timing budget per candidate in seconds (default 10)
  --hopeless X      time a candidate only until its speedup is below X with
                    95% confidence (at least 6 samples of each; default
                    0.5; 0: every candidate to the 0.5% interval); such a
                    result reads "< X" and counts as a result (docs/timing.md)
  --proof P         "sampled" (default): the distributions' trials compare
                    8,192 units drawn after the run (their reference computed
                    for them alone), and the correctness runs are timed: a
                    candidate they decide below X is not timed again;
                    "full": every element, every candidate timed
                    (docs/timing.md)
  --deadline S      kill a worker after S seconds on one candidate (default 180)
  --arch sm_XY      compile target (default: sm_90a)
  --no-timing       stop after correctness
  --tasks DIR       also look for tasks in DIR (repeatable)
  --json            one JSON result per line instead of the table (a
                    candidate refused before it starts has its line too)
  -h, --help        print this help
]]
USAGE = USAGE .. require("klab.command").EXIT_TEXT

local command = require "klab.command"

local function fail(msg, code) return command.fail("batch", msg, code) end

local OPTIONS = {
  ["--proof"] = command.proof_option,
  ["--json"] = "flag", ["--no-timing"] = "flag", ["--db"] = "value", ["--arch"] = "value", ["--tasks"] = "list",
  ["--per-gpu"] = "count", ["--cpu"] = "count0", ["--budget"] = "seconds", ["--hopeless"] = "ratio", ["--deadline"] = "seconds",
  ["--gpus"] = function(v, o)
    o.gpus = v == "all" and v or command.count(v, "--gpus", 1)
    if not o.gpus then return "--gpus needs a number of GPUs or 'all', not '" .. v .. "'" end
  end,
}

local function parse(args) return command.options(args, OPTIONS) end

-- The (task, candidate) pairs to evaluate.
local function work_list(o)
  local fs = require "klab.fs"
  local pos = o.positional
  if #pos == 1 and pos[1]:match("%.jsonl$") then
    local text, err = fs.read(pos[1], 64 * 1024 * 1024)
    if not text then return nil, err end
    local dir = pos[1]:match("^(.*)/[^/]*$") or "."
    local list = {}
    local n = 0
    for line in (text .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
      n = n + 1
      if line:find("%S") then
        local ok, e = pcall(require("klab.json").decode, line)
        if not ok or type(e) ~= "table" or type(e.task) ~= "string" or type(e.candidate) ~= "string" then
          return nil, string.format("%s:%d: expected {\"task\": NAME, \"candidate\": PATH}", pos[1], n)
        end
        -- "seed": the evaluation's seed, so that several lines see the same inputs (klab mutate)
        if e.seed ~= nil and not require("klab.eval.seed").parse(e.seed) then
          return nil, string.format("%s:%d: \"seed\" must be 0x and hex digits, not %s", pos[1], n, tostring(e.seed))
        end
        local path = e.candidate:sub(1, 1) == "/" and e.candidate or (dir .. "/" .. e.candidate)
        list[#list + 1] = { task = e.task, candidate = path, label = e.candidate, line = n, seed = e.seed }
      end
    end
    return list
  end
  if #pos ~= 2 then return nil, "expected TASK DIR or LIST.jsonl" end
  local entries, err = fs.list(pos[2])
  if not entries then return nil, err end
  local list = {}
  for _, e in ipairs(entries) do
    if e.type == "dir" or e.name:match("%.cu$") or e.name:match("%.ptx$") then
      list[#list + 1] = { task = pos[1], candidate = pos[2] .. "/" .. e.name, label = e.name }
    end
  end
  table.sort(list, function(a, b) return a.label < b.label end)
  if #list == 0 then return nil, pos[2] .. " holds no candidate (folders, .cu or .ptx files)" end
  return list
end

-- Every task of the list names a task: a mistake is one line naming where
-- the name came from, before anything is evaluated.
local function check_tasks(o, list)
  local task = require "klab.task"
  local seen = {}
  for _, w in ipairs(list) do
    if not seen[w.task] then
      seen[w.task] = true
      local where = w.line and ("%s:%d: "):format(o.positional[1], w.line) or ""
      if not task.is_name(w.task) then return ("%s%s"):format(where, task.not_a_name(w.task)) end
      local ok, err = pcall(task.get, w.task)
      if not ok then return ("%s%s"):format(where, task.hint(tostring(err):gsub("^[^:\n]+%.lua:%d+: ", ""))) end
    end
  end
end

function M.main(args)
  local o, code = command.parsed("batch", USAGE, parse(args))
  if not o then return code end
  require("klab.task").use_path(o.tasks)
  local list, lerr = work_list(o)
  if not list then return fail(lerr, command.EXIT.usage) end
  local terr = check_tasks(o, list)
  if terr then return fail(terr, command.EXIT.usage) end
  local eval = require "klab.eval"
  local verdicts = require "klab.eval.verdict"
  local progress = require "klab.progress"
  local sys = require "klab.sys"
  local db
  if o.db then
    local derr
    db, derr = require("klab.store.records").open(o.db)
    if not db then return fail(derr, command.EXIT.usage) end
  end
  local ok, s = pcall(eval.session, { db = db, deadline = o.deadline, gpus = o.gpus or "all", per_gpu = o.per_gpu,
    cpu = o.cpu or require("klab.eval.pool").default_cpu(), arch = o.arch })
  if not ok then return fail(tostring(s), command.EXIT.usage) end
  local t0 = sys.now()
  local tickets, results, counts = {}, {}, {}
  for i, w in ipairs(list) do
    local ticket, err = s:submit(w.task, w.candidate, { timing = not o.no_timing, timing_opts = { budget_s = o.budget, hopeless = o.hopeless },
      deadline = o.deadline, seed = w.seed, proof = o.proof })
    if ticket then
      tickets[ticket] = i
    else
      -- Refused before it started: still one line of --json, naming it.
      local r = verdicts.make("unknown", { kind = "start", message = err })
      r.task, r.name = w.task, w.label
      results[i] = r
      counts.unknown = (counts.unknown or 0) + 1
      if o.json then print(require("klab.json").encode(r, { nonfinite = true })) end
    end
  end
  local bar = progress.new { total = #list, label = "batch", mode = o.json and "off" or "auto" }
  local done = 0
  for _ in pairs(results) do done = done + 1 end
  while s:pending() > 0 do
    for _, d in ipairs(s:poll(0.5)) do
      local i = tickets[d.ticket]
      results[i] = d.result
      counts[d.result.verdict] = (counts[d.result.verdict] or 0) + 1
      done = done + 1
      bar:update { done = done, counts = counts }
      if o.json then print(require("klab.json").encode(d.result, { nonfinite = true })) end
    end
  end
  bar:finish()
  local elapsed = sys.now() - t0
  s:close()
  if db then db:close() end
  if not o.json then
    local stages = require "klab.eval.stages"
    local term = require("klab.report.escape").terminal
    print(string.format("%-32s %-28s %-20s %-12s %-9s %s", "candidate", "task", "verdict", "median", "speedup", "reason"))
    for i, w in ipairs(list) do
      local r = results[i]
      local tm = r.stages and r.stages.timing
      local time = tm and tm.candidate and tm.candidate.median and string.format("%.1f us", tm.candidate.median) or "-"
      -- What could not be evaluated says so, in place of a verdict.
      local v = verdicts.measured(r.verdict) and r.verdict or ("not evaluated (" .. r.verdict .. ")")
      local reason = r.reason or ""
      if #reason > 100 then reason = reason:sub(1, 97) .. "..." end
      -- Names from the list, shown with their control characters escaped.
      print(string.format("%-32s %-28s %-20s %-12s %-9s %s", term(w.label), term(w.task), v, time,
        stages.speedup_text(tm) or "-", term(reason)))
    end
  end
  local parts = {}
  for _, v in ipairs(verdicts.NAMES) do
    if counts[v] then parts[#parts + 1] = v .. "=" .. counts[v] end
  end
  io.stderr:write(string.format("%d candidates in %.1f s: %.1f evaluations per minute (%s)\n", #list, elapsed,
    60 * #list / math.max(elapsed, 1e-9), table.concat(parts, " ")))
  -- Nothing measured (no GPU, no driver): the batch could not run.
  local measured = 0
  for v, n in pairs(counts) do if verdicts.measured(v) then measured = measured + n end end
  if measured == 0 then
    io.stderr:write("klab batch: nothing could be evaluated here\n")
    return command.EXIT.could_not_run
  end
  return command.EXIT.ok
end

return M
