-- klab export: training data from an experiment store.
local M = {}

M.summary = "export training data (SFT JSONL) from an experiment store"

local USAGE = [[
usage: klab export sft DB [--out FILE] [--verified] [--min-speedup P] [--cap N]
                          [--kind generation|repair|both] [--experiment NAME]

Writes JSON Lines for supervised fine-tuning, one record per line, in the
two shapes PTXBench uses:

  generation  the task prompt -> a correct kernel (one per correct turn)
  repair      the task prompt, a failed attempt, the feedback it got and the
              repaired kernel (one per correct turn that follows a failed one)

  --out FILE        where to write (default: DB's name without its extension,
                    plus "_sft.jsonl"; "-" for standard output)
  --verified        only kernels whose target instructions were seen executing
  --min-speedup P   only kernels with a speedup above P over the library
  --cap N           at most N records per task and kind (the fastest)
  --kind K          generation, repair or both (default both)
  --experiment NAME only this experiment of the store

Prints how the records spread over tasks and failure kinds (to standard
error when the records go to standard output). Record fields:
docs/report.md.

With no record to write, the summary says why (no turn passed, none was
measured, the filters dropped them all) and the status is 3 when nothing
in the scope was measured, else 1. A missing or unreadable store, or an
experiment the store does not hold, is 2.

]]

local command = require "klab.command"
local EXIT = command.EXIT
USAGE = USAGE .. command.EXIT_TEXT

local OPTIONS = {
  ["--verified"] = "flag", ["--out"] = "value", ["--cap"] = "count0", ["--kind"] = "value", ["--experiment"] = "value",
  ["--min-speedup"] = function(v, o)
    o.min_speedup = tonumber(v)
    if not o.min_speedup then return "--min-speedup needs a number, got '" .. v .. "'" end
  end,
}

function M.parse(args)
  local o, err = command.options(args, OPTIONS)
  if not o then return nil, err end
  local pos = o.positional
  o.kind = o.kind or "both"
  if o.help then return o end
  if pos[1] ~= "sft" then return nil, "expected the format 'sft' first (klab export sft DB)" end
  if #pos ~= 2 then return nil, "expected one store file (DB) after 'sft'" end
  o.db = pos[2]
  if o.kind ~= "generation" and o.kind ~= "repair" and o.kind ~= "both" then
    return nil, "--kind must be generation, repair or both, got '" .. o.kind .. "'"
  end
  o.out = o.out or (o.db:gsub("%.[%w]+$", "") .. "_sft.jsonl")
  return o
end

function M.main(args)
  local o, pcode = command.parsed("export", USAGE, M.parse(args))
  if not o then return pcode end
  local export = require("klab.report.export")
  -- Records are written as they are made (the export does not hold them).
  local f, ferr
  if o.out == "-" then f = io.stdout else f, ferr = require("klab.fs").create(o.out) end
  if not f then return command.fail("export", tostring(ferr), EXIT.usage) end
  local json = require("klab.json").encode
  local n, summary, code = export.sft(o.db, { kind = o.kind, verified = o.verified, min_speedup = o.min_speedup,
    cap = o.cap, experiment = o.experiment, write = function(r) f:write(json(r), "\n") end })
  if f == io.stdout then f:flush() elseif not n then f:abort() else
    local ok, cerr = f:close()
    if not ok then return command.fail("export", tostring(cerr), EXIT.failed) end
  end
  if not n then
    -- The store or the experiment named on the command line is the problem
    -- (EEXPORT is everything else).
    return command.fail("export", (tostring(summary):gsub("^export: ", "")), code == "EEXPORT" and EXIT.failed
      or EXIT.usage)
  end
  local out = o.out == "-" and io.stderr or io.stdout
  out:write(export.summary_text(summary), "\n")
  -- No record: no empty file left behind to be mistaken for a data set.
  if n == 0 and o.out ~= "-" then os.remove(o.out) end
  out:write(n == 0 and "nothing exported: no file written\n"
    or ("wrote %d records to %s\n"):format(n, o.out == "-" and "standard output" or o.out))
  if n > 0 then return EXIT.ok end
  return summary.turns > 0 and summary.passed == 0 and summary.not_result == summary.turns and EXIT.could_not_run
    or EXIT.failed
end

return M
