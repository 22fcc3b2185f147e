-- klab report: figures, tables and an index.html from an experiment store.
local M = {}

M.summary = "write the figures, tables and index.html of an experiment store"

local USAGE = [==[
usage: klab report DB... [--out DIR] [--experiment NAME] [--by VAR[,VAR]]
                           [--format md,tex] [--ps P[,P]...]

Reads the store DB (read-only; a store in a folder you cannot write is
fine) and writes into DIR (default: DB's name without its extension, plus
"_report/"); the report is made beside DIR and renamed into place, so an
interrupted report leaves the previous one whole. DIR must be new, empty,
or a previous report. Each experiment of the store gets its own section
(--experiment NAME: only that one):

  index.html                 figures, tables and the experiment's provenance
  metrics.json               every number, with 95% bootstrap intervals
  figures/*.png|svg|pdf      fast_p, correct/verified bars, failure mix per
                             turn, best speedup against the turn, every
                             candidate's speedup (gnuplot; figures/src/*.gp)
  tables/*.md|tex            (--format) PTXBench's correct / verified / best speedup per
                             architecture, KernelBench-Verified's speedup /
                             correctness / Fast@1, and the detail tables

Turns whose GPU stages did not run (verdict unknown) or whose model did
not answer (request_error) are not results: they are counted apart, and
the report says so on its first screen. Unfinished trajectories are not
failures. Figures with nothing to show are left out, with the reason.
The same store always gives the same bytes. Definitions: docs/report.md.

Several stores (a study's shards, or two studies) make one report: they are
read together as `klab merge` would put them (an experiment of one name with
two different configs cannot be, and is refused).

--by VAR[,VAR]  set conditions side by side: every table and figure groups
                the trajectories by these instead of by model, all in one
                section, and a table compares the first condition with each
                other one on the tasks both ran (the difference of correct
                rates with Newcombe's interval; the geometric mean of the
                best-speedup ratio with a bootstrap interval over tasks).
                VAR: model, tag, task, family, arch, experiment, turns,
                template, policy (tools or turns), language (the language
                a study asked the trajectory's kernels in: cuda, cute,
                triton), or any field of the experiment's spec that is one
                value per experiment (mode, select, ...); a list (tags,
                models, tasks, languages) is refused: use tag, model, task,
                language.

--format F[,F]  the table files written: md (Markdown), tex (LaTeX with
                booktabs rules, for a paper); default md,tex.
--ps P[,P]...   the fast_p thresholds of the fast_p table (speedups over
                the baseline, >= 0); default 0,0.5,0.8,1,1.25,1.5,2,3.

A missing store, a file that is not one, an experiment the store does not
hold (the ones it holds are named) and a --out that cannot hold a report
are 2; 1 when the report could not be written (gnuplot failed).

]==]

local command = require "klab.command"
local EXIT = command.EXIT
USAGE = USAGE .. command.EXIT_TEXT

-- klab.report.write's failure codes that mean the command line named
-- something that is not there or cannot be used.
local USER = { ENOENT = true, EINVAL = true, ENOTFOUND = true }

local OPTIONS = { ["--out"] = "value", ["--experiment"] = "value", ["--by"] = "value", ["--format"] = "value",
  ["--ps"] = "value" }

function M.parse(args)
  local o, err = command.options(args, OPTIONS)
  if not o then return nil, err end
  local pos = o.positional
  if o.help then return o end
  if #pos < 1 then return nil, "expected a store file (DB)" end
  o.db = #pos == 1 and pos[1] or pos
  o.out = o.out or (pos[1]:gsub("%.[%w]+$", "") .. "_report")
  if o.by then
    local vars = {}
    for v in o.by:gmatch("[^,%s]+") do vars[#vars + 1] = v end
    o.by = vars
  end
  if o.format then
    local f = {}
    for v in o.format:gmatch("[^,%s]+") do
      if v ~= "md" and v ~= "tex" then return nil, "--format: '" .. v .. "' is not md or tex" end
      f[v] = true
    end
    if not next(f) then return nil, "--format: expected md, tex or md,tex" end
    o.format = f
  end
  if o.ps then
    local ps = {}
    for v in o.ps:gmatch("[^,%s]+") do
      local x = tonumber(v)
      if not x or x < 0 or x ~= x or x == math.huge then return nil, "--ps: '" .. v .. "' is not a speedup >= 0" end
      ps[#ps + 1] = x
    end
    if #ps == 0 then return nil, "--ps: expected thresholds such as 0,1,2" end
    table.sort(ps)
    o.ps = ps
  end
  return o
end

function M.main(args)
  local o, pcode = command.parsed("report", USAGE, M.parse(args))
  if not o then return pcode end
  local files, msg, code = require("klab.report").write(o.db, o.out, { experiment = o.experiment, by = o.by,
    formats = o.format, ps = o.ps })
  if not files then
    return command.fail("report", (tostring(msg):gsub("^report: ", "")), USER[code] and EXIT.usage or EXIT.failed)
  end
  for _, w in ipairs(msg or {}) do io.stderr:write("klab report: ", require("klab.report.escape").terminal(w), "\n") end
  print(("klab report: %d files in %s/; open %s/index.html"):format(#files, (o.out:gsub("/+$", "")),
    (o.out:gsub("/+$", ""))))
  return 0
end

return M
