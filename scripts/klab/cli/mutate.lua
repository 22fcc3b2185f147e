-- klab mutate: mutants of a passing candidate, and the mutation score of
-- the judge once `klab batch` has judged them.
--
--   klab mutate TASK CANDIDATE [--families F,...] [--out DIR] [--max N] [--list]
--   klab mutate --score DIR [DIR...] [--results FILE]
local M = {}

M.summary = "inject faults into a passing candidate; score how many klab's checks catch"

local USAGE = [[
usage: klab mutate TASK CANDIDATE [options]
       klab mutate --score DIR [DIR...] [--results FILE]

Writes mutants of CANDIDATE (a folder with kernel.cu or kernel.ptx and an
optional plan.lua, or a single .cu or .ptx file, as `klab eval` takes it),
a candidate that passes TASK: each is the kernel with one fault injected,
in one folder with the same plan. The families of faults:
  precision        an accumulator narrowed to bf16 or f16, an input rounded
                   to bf16 or fp8 precision, a fast-math intrinsic swapped in
                   (expf -> __expf, x / y -> __fdividef, tanhf -> tanh.approx)
  bounds           a loop bound or a guard off by one; the last iteration or
                   the last row skipped
  indexing         two indices swapped, a stride replaced by another
                   dimension, a row offset dropped
  constants        a scale (+5%) or an epsilon (x100) changed, a shift count
                   changed
  reductions       a tree's first step skipped, a step's partial sum dropped,
                   a shuffle step dropped
  synchronisation  a barrier (__syncthreads, bar.sync), a fence, a wait or an
                   mbarrier arrive removed
  work             odd iterations of a loop skipped, a load stage (cp.async,
                   TMA, a load function) skipped on odd iterations
PTX candidates get precision (div/sqrt/rcp made approximate), bounds (setp
off by one), constants and synchronisation only.

Every mutant is compiled (NVRTC or ptxas, for --arch); one that does not
compile, or compiles to the original's binary, is dropped and counted. The
output folder DIR holds original/ (the candidate as it is), one folder per
mutant, batch.jsonl (the original on its first line, then every mutant, all
with one seed, so that every evaluation sees the same inputs) and
mutants.json (each mutant's id, family, operator, file, line, and the
original and mutated lines). Judge them with

  klab batch DIR/batch.jsonl --json > DIR/results.jsonl
  klab mutate --score DIR

--score reads the results and prints, per family and per task family, the
mutants caught (any verdict but passed and target_not_executed), the
equivalent ones (passed with outputs bit-identical to the original's on
every correctness trial: left out of the score), the survivors (passed
with different outputs), and lists each survivor with its file:line.

Options:
  --families F,...  only these families (default: all)
  --out DIR         where to write (default: ./NAME-mutants, NAME the
                    candidate's); refused if it exists and is not empty,
                    unless it is klab mutate's own earlier output
  --max N           at most N mutants per family, picked in a fixed
                    pseudo-random order (the same every time)
  --arch sm_XY      compile target (default: sm_90a)
  --seed S          the seed of every evaluation of the batch (default: new)
  --list            print the mutants; write nothing
  --tasks DIR       also look for tasks in DIR (repeatable)
  --score DIR...    print the score of judged mutant folders
  --results FILE    the results of `klab batch --json` for every DIR (one
                    batch may judge several folders; default: each DIR's
                    results.jsonl)
  -h, --help        print this help
]]

local command = require "klab.command"
local EXIT = command.EXIT
USAGE = USAGE .. command.EXIT_TEXT

local function fail(msg, code) return command.fail("mutate", msg, code) end

local OPTIONS = {
  ["--families"] = "value", ["--out"] = "value", ["--max"] = "count", ["--arch"] = "value", ["--list"] = "flag",
  ["--tasks"] = "list", ["--score"] = "flag", ["--results"] = "value", ["--seed"] = command.seed_option,
}

local function parse(args) return command.options(args, OPTIONS) end

local function score(o)
  if #o.positional == 0 then return command.usage_error("mutate", "--score needs a folder of mutants (klab mutate --score DIR)") end
  local sc = require "klab.mutate.score"
  local runs = {}
  for _, dir in ipairs(o.positional) do
    local run, err = sc.load(dir, o.results)
    if not run then return fail(err, EXIT.usage) end
    runs[#runs + 1] = run
  end
  local tab, err, why = sc.table(runs)
  if not tab then return fail(err, why == "unjudged" and EXIT.could_not_run or EXIT.failed) end
  io.write(sc.format(tab))
  return EXIT.ok
end

function M.main(args)
  local o, pcode = command.parsed("mutate", USAGE, parse(args or {}))
  if not o then return pcode end
  if o.score then return score(o) end
  if #o.positional ~= 2 then
    return command.usage_error("mutate", "expected TASK CANDIDATE (klab mutate TASK CANDIDATE [--out DIR])")
  end
  local mutate = require "klab.mutate"
  local families
  if o.families then
    families = {}
    for f in o.families:gmatch("[^,]+") do families[#families + 1] = f end
    local ok, why = mutate.check_families(families)
    if not ok then return command.usage_error("mutate", "--families: " .. why) end
  end
  local arch = o.arch or "sm_90a"
  local aok, awhy = require("klab.jit").check_arch(arch)
  if not aok then return fail("--arch: " .. tostring(awhy), EXIT.usage) end
  local task = require "klab.task"
  task.use_path(o.tasks)
  local tname, cpath = o.positional[1], o.positional[2]
  if not task.is_name(tname) then return fail(task.not_a_name(tname), EXIT.usage) end
  local tok, terr = pcall(task.get, tname)
  if not tok then return fail(task.hint(tostring(terr):gsub("^[^:\n]+%.lua:%d+: ", "")), EXIT.usage) end
  local c, cerr = require("klab.eval.candidate").load(cpath)
  if not c then return fail(cerr, EXIT.usage) end
  local out = o.out or ((c.name:gsub("%.[^.]*$", "")) .. "-mutants")
  if not o.list then
    local ok, why = mutate.check_out(out)
    if not ok then return fail(why, EXIT.usage) end
  end
  local made, merr = mutate.make(c, { families = families, max = o.max, arch = arch })
  if not made then return fail(merr, EXIT.usage) end
  local lines = {}
  for _, m in ipairs(made.mutants) do
    lines[#lines + 1] = ("%-20s %-40s %s:%d: %s"):format(m.id, m.operator, c.file or c.name, m.line,
      (m.mutated:gsub("^%s+", ""):gsub("\n%s*", " ")))
  end
  local counts = {}
  for _, m in ipairs(made.mutants) do counts[m.family] = (counts[m.family] or 0) + 1 end
  local summary = {}
  for _, f in ipairs(made.families) do
    local d = made.dropped[f]
    summary[#summary + 1] = ("%-16s %4d written, %3d not compiling, %3d same binary"):format(f, counts[f] or 0,
      d.not_compiling, d.same_binary)
  end
  if o.list then
    if #lines > 0 then print(table.concat(lines, "\n")) end
    io.stderr:write(table.concat(summary, "\n"), "\n")
    return EXIT.ok
  end
  local seeds = require "klab.eval.seed"
  local seed = seeds.format(o.seed and assert(seeds.parse(o.seed)) or seeds.new())
  local ok, werr = mutate.write(out, tname, c, made, { arch = arch, seed = seed, max = o.max })
  if not ok then return fail(werr, EXIT.failed) end
  print(table.concat(summary, "\n"))
  print(("%d mutants of %s in %s; judge them with: klab batch %s/batch.jsonl --json > %s/results.jsonl; "
    .. "then: klab mutate --score %s"):format(#made.mutants, c.file or c.name, out, out, out, out))
  return EXIT.ok
end

return M
