-- klab merge: shard stores into one.
local M = {}

M.summary = "merge stores (the shards of a sweep) into one, nothing lost or duplicated"

local USAGE = [[
usage: klab merge OUT.db SHARD.db...

Adds every row of each SHARD store to OUT (created when missing): the
response cache, candidates, compiles, evaluations with their measurements,
environments (every run's, for provenance) and the experiments with their
trajectories and turns. Rows are matched by their keys (content hashes,
idempotency keys, trajectory keys), never by their ids, so merging a shard
twice, or running the same merge again, changes nothing. A shard whose
trajectory or evaluation went further than OUT's copy (a store saved again
after a requeue) replaces it. The same key with different content is a
conflict: OUT's row is kept and the conflict is listed. An experiment of the
same name with another config refuses that shard. Each shard is merged in
one transaction: all of it or nothing.

The shards are opened read-only. Write OUT on a local disk: SQLite is not
safe over NFS (docs/slurm.md).

Here 0 means every shard merged without conflicts and 1 that a shard could
not be merged or conflicts were found.
]]
USAGE = USAGE .. require("klab.command").EXIT_TEXT

function M.parse(args)
  local o, err = require("klab.command").options(args, {})
  if not o or o.help then return o, err end
  local pos = o.positional
  if #pos < 2 then return nil, "expected the output store and at least one shard store" end
  o.out = table.remove(pos, 1)
  o.sources = pos
  return o
end

function M.main(args)
  local command = require("klab.command")
  local o, code = command.parsed("merge", USAGE, M.parse(args))
  if not o then return code end
  local merge = require("klab.store.merge")
  local db <close>, err = require("klab.store.records").open(o.out)
  if not db then return command.fail("merge", err, command.EXIT.usage) end
  -- The output is written by this klab: its verdicts are this klab's (a
  -- shard from an older one brings no verdicts table of its own).
  require("klab.store.records").define_verdicts(db)
  local failed, conflicts = 0, 0
  for _, path in ipairs(o.sources) do
    local ok, report = pcall(merge.merge, db, path)
    if ok then
      local term = require("klab.report.escape").terminal
      print(term(merge.summary(report)))
      for _, c in ipairs(report.conflicts) do io.stderr:write(term("klab merge: conflict in " .. path .. ": " .. c), "\n") end
      conflicts = conflicts + #report.conflicts
    else
      failed = failed + 1
      command.fail("merge", ("%s not merged: %s"):format(path, tostring(report)))
    end
  end
  local merged = #o.sources - failed
  print(require("klab.report.escape").terminal(("%s: %d of %d stores merged, %d conflicts"):format(o.out, merged,
    #o.sources, conflicts)))
  return (failed > 0 or conflicts > 0) and 1 or 0
end

return M
