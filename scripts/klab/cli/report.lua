-- klab report: figures, tables and an index.html from an experiment store.
local M = {}

M.summary = "write the figures, tables and index.html of an experiment store"

local USAGE = [[
usage: klab report DB [--out DIR] [--experiment NAME]

Reads the store DB (read-only) and writes into DIR (default: DB's name
without its extension, plus "_report/"):

  index.html                 figures, tables and the experiment's provenance
  metrics.json               every number, with 95% bootstrap intervals
  figures/*.png|svg|pdf      fast_p, correct/verified bars, failure mix per
                             turn, best speedup against the turn, every
                             candidate's speedup (gnuplot; figures/src/*.gp)
  tables/*.md|tex            PTXBench's correct / verified / best speedup per
                             architecture, KernelBench-Verified's speedup /
                             correctness / Fast@1, and the detail tables

The same store always gives the same bytes. Definitions: docs/report.md.

Exit status: 0 when the report was written, 1 when it could not be (no such
file, not a klab store, gnuplot failed), 2 for a bad command line.
]]

function M.parse(args)
  local o, pos = {}, {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "-h" or a == "--help" then
      o.help = true
    elseif a == "--out" or a == "--experiment" then
      local v = args[i + 1]
      if not v or v == "" then return nil, "option " .. a .. " needs a value" end
      o[a:sub(3)] = v
      i = i + 1
    elseif a:sub(1, 1) == "-" and a ~= "-" then
      return nil, "unknown option " .. a
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  if o.help then return o end
  if #pos ~= 1 then return nil, "expected one store file (DB)" end
  o.db = pos[1]
  o.out = o.out or (o.db:gsub("%.[%w]+$", "") .. "_report")
  return o
end

function M.main(args)
  local o, code = require("klab.command").parsed("report", USAGE, M.parse(args))
  if not o then return code end
  local files, msg = require("klab.report").write(o.db, o.out, { experiment = o.experiment })
  if not files then
    io.stderr:write("klab report: ", (tostring(msg):gsub("^report: ", "")), "\n")
    return 1
  end
  for _, w in ipairs(msg or {}) do io.stderr:write("klab report: warning: ", w, "\n") end
  print(("klab report: %d files in %s/; open %s/index.html"):format(#files, (o.out:gsub("/+$", "")),
    (o.out:gsub("/+$", ""))))
  return 0
end

return M
