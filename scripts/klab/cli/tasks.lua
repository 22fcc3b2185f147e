-- klab tasks: list the tasks (every variant of every task file).
--
--   klab tasks [--json] [--family F] [--tasks DIR]... [--tag T]
--   klab tasks --kernelbench [--tasks DIR]...
--
-- Exit status (klab.command.EXIT): 0 listed (and every task file loaded);
-- 1 some task file failed to load (its error is printed, the others are
-- listed); 2 bad command line, no task directory, or a --family or --tag
-- that no task has (the known ones are named).
local M = {}

M.summary = "list tasks: name, family, shape, dtypes, FLOPs, targets"

local USAGE = [[
usage: klab tasks [--json] [--family F] [--tag T] [--tasks DIR]...
       klab tasks --check DIR... [--tasks DIR]...
       klab tasks --kernelbench [--tasks DIR]...

Lists every task on the task search path: one line per variant
with its name, family, dimensions, buffer dtypes (inputs -> outputs),
GFLOP per run and target instruction families per architecture.

Options:
  --json        print a JSON array, one object per task (with its
                description and default plan; 'klab prompt TASK' prints
                the whole message a model is sent)
  --family F    only tasks of family F
  --tag T       only tasks carrying tag T (e.g. ptxbench, odd, small)
  --tasks DIR   look for tasks in DIR first (repeatable); then in the
                folders of $KLAB_TASKS (dir1:dir2), then in the repository's
                tasks/; a task name found twice is taken from the first
  --root DIR    only the tasks in DIR
  --check DIR...
                check the task folders DIR (anywhere) without a GPU: every
                task file loads; for every variant and target (sm_90a,
                sm_100a) the reference and a shipped baseline compile and
                their plans run; a cuDNN graph baseline describes; every
                samples/ and bad/ expected.lua names real tasks, verdicts
                and candidates that build and plan (an entry's task is
                looked up in DIR first, then on the search path). Each
                mistake is one line FILE: FIELD: what is wrong; any
                mistake is exit 2
  --kernelbench print the table of KernelBench's problems (Levels 1 to 3)
                and the tasks that pose them, from the tasks' kernelbench
                claims and docs/kernelbench_problems.lua: the counts per
                level (exact, differs, missing), then one row per problem,
                as docs/kernelbench.md holds it. A claim that names no
                problem, a problem claimed as exact by two tasks, or a
                variant tagged kernelbench that is not the current shape
                of the problem its task poses exactly is one line on
                stderr and exit 2
  -h, --help    print this help

Here 1 means a task file failed to load (reported on stderr, the rest
still listed); a --family or --tag that no task has is 2, with the known
ones named.

]]

local command = require "klab.command"
local EXIT = command.EXIT
-- Names from task folders reach the terminal escaped.
local term = require("klab.report.escape").terminal
USAGE = USAGE .. command.EXIT_TEXT

local OPTIONS = { ["--json"] = "flag", ["--family"] = "value", ["--root"] = "value", ["--tag"] = "value",
  ["--tasks"] = "list", ["--check"] = "flag", ["--kernelbench"] = "flag" }

local function parse(args)
  local o, err = command.options(args, OPTIONS)
  if o and not o.check and #o.positional > 0 then return nil, "unknown argument '" .. o.positional[1] .. "'" end
  if o and o.check and #o.positional == 0 then return nil, "--check needs the task folders to check (DIR...)" end
  return o, err
end

local function has_tag(t, tag)
  for _, x in ipairs(t.tags) do
    if x == tag then return true end
  end
  return false
end

local dtypes = require("klab.task.record").dtypes

local function shape_text(t)
  local parts = {}
  for _, d in ipairs(t.dim_order) do parts[#parts + 1] = d .. "=" .. t.dims[d] end
  return table.concat(parts, " ")
end

local function targets_text(t)
  local archs = {}
  for arch in pairs(t.targets) do archs[#archs + 1] = arch end
  table.sort(archs)
  local parts = {}
  for _, arch in ipairs(archs) do
    local fams = {}
    for _, f in ipairs(t.targets[arch]) do fams[#fams + 1] = f end
    parts[#parts + 1] = arch .. ":" .. table.concat(fams, "+")
  end
  return table.concat(parts, " ")
end

local record = require("klab.task.record").of

-- klab tasks --check DIR...: one line per mistake, exit 2 when any.
function M.check(dirs)
  local task = require("klab.task")
  for _, d in ipairs(dirs) do
    if not task.is_dir(d) then return command.fail("tasks", "--check: no folder " .. d, EXIT.usage) end
  end
  local problems, n = require("klab.eval.task_check").run(dirs)
  for _, p in ipairs(problems) do io.stdout:write(term(("%s: %s: %s"):format(p.file, p.field, p.message)), "\n") end
  io.stderr:write(("klab tasks: checked %d task file%s (%d tasks, %d variants, %d samples and known-bad kernels) "
    .. "in %s: %s\n"):format(n.files, n.files == 1 and "" or "s", n.tasks, n.variants, n.candidates,
    term(table.concat(dirs, ", ")), #problems == 0 and "no mistakes" or (#problems .. " mistake" .. (#problems == 1 and "" or "s"))))
  if n.files == 0 then
    return command.fail("tasks", "--check: no task files in " .. table.concat(dirs, ", "), EXIT.usage)
  end
  return #problems == 0 and EXIT.ok or EXIT.usage
end

-- klab tasks --kernelbench: the coverage table of docs/kernelbench.md.
function M.kernelbench(all, errs)
  local kb = require("klab.task.kernelbench")
  local ok, problems = pcall(kb.problems, require("klab.task").returned)
  if not ok then return command.fail("tasks", "--kernelbench: " .. tostring(problems), EXIT.could_not_run) end
  local cov = kb.coverage(all, problems)
  io.write(kb.markdown(cov))
  for _, e in ipairs(errs) do io.stderr:write("klab tasks: ", term(e), "\n") end
  for _, m in ipairs(cov.mistakes) do io.stderr:write("klab tasks: ", term(m), "\n") end
  if #cov.mistakes > 0 then return EXIT.usage end
  return #errs == 0 and EXIT.ok or EXIT.failed
end

function M.main(args)
  local o, code = command.parsed("tasks", USAGE, parse(args or {}))
  if not o then return code end
  local task = require("klab.task")
  task.use_path(o.tasks)
  if o.check then return M.check(o.positional) end
  local roots = o.root and { o.root } or task.path()
  for _, root in ipairs(roots) do
    if not task.is_dir(root) then
      return command.fail("tasks", "no task directory at " .. root .. " (use --tasks DIR or set KLAB_TASKS)",
        EXIT.usage)
    end
  end
  local all, errs = task.list(roots)
  if o.kernelbench then return M.kernelbench(all, errs) end
  -- A filter that matches no task is a typo: name what there is.
  for _, f in ipairs { { "family", function(t) return { t.family } end }, { "tag", function(t) return t.tags end } } do
    local want = o[f[1]]
    if want then
      local known, seen = {}, {}
      for _, t in ipairs(all) do
        for _, v in ipairs(f[2](t)) do
          if not seen[v] then seen[v] = true known[#known + 1] = v end
        end
      end
      if not seen[want] then
        table.sort(known)
        for _, e in ipairs(errs) do io.stderr:write("klab tasks: ", term(e), "\n") end
        return command.fail("tasks", ("no task has %s '%s'%s (known: %s)"):format(f[1], want,
          require("klab.errors").did_you_mean(want, known), table.concat(known, ", ")), EXIT.usage)
      end
    end
  end
  local shown = {}
  for _, t in ipairs(all) do
    if (not o.family or t.family == o.family) and (not o.tag or has_tag(t, o.tag)) then
      shown[#shown + 1] = t
    end
  end
  if o.json then
    local recs = {}
    for i, t in ipairs(shown) do recs[i] = record(t) end
    io.write(require("klab.json").encode(recs), "\n")
  else
    local rows = { { "NAME", "FAMILY", "SHAPE", "DTYPES", "GFLOP", "TARGETS" } }
    for _, t in ipairs(shown) do
      local ins, outs = dtypes(t)
      rows[#rows + 1] = { term(t.name), term(t.family), term(shape_text(t)), term(ins .. "->" .. outs),
                          ("%.3f"):format(t.flops / 1e9), term(targets_text(t)) }
    end
    local widths = {}
    for _, r in ipairs(rows) do
      for c, cell in ipairs(r) do widths[c] = math.max(widths[c] or 0, #cell) end
    end
    for _, r in ipairs(rows) do
      local cells = {}
      for c, cell in ipairs(r) do
        cells[c] = c == #r and cell or (cell .. string.rep(" ", widths[c] - #cell))
      end
      io.write(table.concat(cells, "  "), "\n")
    end
    io.write(("%d task%s\n"):format(#shown, #shown == 1 and "" or "s"))
  end
  for _, e in ipairs(errs) do io.stderr:write("klab tasks: ", term(e), "\n") end
  return #errs == 0 and EXIT.ok or EXIT.failed
end

return M
