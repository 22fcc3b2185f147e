-- klab.experiment.shard: one sweep split over N processes (the tasks of a
-- Slurm job array, or N runs started any other way).
--
-- A shard is {index = I, count = N} with 0 <= I < N. The trajectories of a
-- sweep have a fixed order (models x task groups x tags x replicas); shard I
-- of N takes those whose 0-based position p has p % N == I, so the shards
-- differ in size by one trajectory at most and together hold every
-- trajectory exactly once. Each shard writes its own store; `klab merge`
-- puts the stores together.
--
-- Where a process's shard comes from, first match wins: the experiment
-- spec's `shard` field (false: the whole sweep), `shard=I/N` on an
-- experiment script's command line (taken by klab.experiment's options), a
-- Slurm array task's environment (SLURM_ARRAY_TASK_ID with
-- SLURM_ARRAY_TASK_COUNT, or SLURM_ARRAY_TASK_MIN and _MAX, and _STEP);
-- none: the whole sweep.

local M = {}

-- The shard given on this process's command line (M.take), if any.
M.command_line = nil

local function make(index, count, given)
  index, count = math.tointeger(tonumber(index)), math.tointeger(tonumber(count))
  if not index or not count or count < 1 or index < 0 or index >= count then
    error(("shard: expected I/N with 0 <= I < N, got '%s'"):format(tostring(given)), 0)
  end
  return { index = index, count = count }
end

-- "I/N" or {index = I, count = N} -> a checked shard; nil and false pass
-- through (no shard, the whole sweep). Bad values raise and say why.
function M.parse(v)
  if v == nil or v == false then return v end
  if type(v) == "table" then return make(v.index, v.count, ("{index = %s, count = %s}"):format(v.index, v.count)) end
  local i, n = tostring(v):match("^%s*(%d+)%s*/%s*(%d+)%s*$")
  return make(i, n, v)
end

-- The shard of a Slurm array task, or nil outside one. Array task ids need
-- not start at 0 (--array=1-8) and may step (--array=0-15:4): the index is
-- the task's place among the array's ids. getenv defaults to os.getenv.
function M.from_slurm(getenv)
  getenv = getenv or os.getenv
  local id = getenv("SLURM_ARRAY_TASK_ID")
  if not id or id == "" then return nil end
  local function int(name)
    local v = getenv(name)
    return v and v ~= "" and math.tointeger(tonumber(v)) or nil
  end
  local task = int("SLURM_ARRAY_TASK_ID")
  local min, max, step, count = int("SLURM_ARRAY_TASK_MIN"), int("SLURM_ARRAY_TASK_MAX"),
    int("SLURM_ARRAY_TASK_STEP") or 1, int("SLURM_ARRAY_TASK_COUNT")
  if not task or step < 1 then error(("shard: cannot read the Slurm array task (SLURM_ARRAY_TASK_ID=%s)"):format(id), 0) end
  min = min or 0
  if not count and max then count = (max - min) // step + 1 end
  if not count then
    error("shard: SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is", 0)
  end
  if (task - min) % step ~= 0 then
    error(("shard: array task %d is not on the array's step (min %d, step %d)"):format(task, min, step), 0)
  end
  local index = (task - min) // step
  return make(index, count, ("SLURM_ARRAY_TASK_ID=%d of %d"):format(task, count))
end

-- The shard a run uses: the spec's value when it has one (false: none),
-- else the command line's, else the Slurm array task's, else nil.
function M.resolve(spec_value, getenv)
  if spec_value ~= nil then return M.parse(spec_value) or nil end
  return M.command_line or M.from_slurm(getenv)
end

-- args without their shard=I/N (which becomes M.command_line; nil when the
-- arguments have none).
function M.take(args)
  local rest, found = {}, nil
  for _, a in ipairs(args or {}) do
    local v = type(a) == "string" and a:match("^shard=(.*)$")
    if v then found = M.parse(v) else rest[#rest + 1] = a end
  end
  M.command_line = found
  return rest
end

-- A store path with {index} and {count} filled from the shard
-- ("results/sweep.shard{index}.db"). A path that names them without a
-- shard raises: every shard would write one file.
function M.path(template, shard)
  if not (template:find("{index}", 1, true) or template:find("{count}", 1, true)) then return template end
  if not shard then error(("shard: the store %s names {index} but no shard is set (shard=I/N)"):format(template), 0) end
  return (template:gsub("{index}", tostring(shard.index)):gsub("{count}", tostring(shard.count)))
end

-- Whether the trajectory at 0-based position p of the sweep is the shard's.
function M.keeps(shard, p)
  return not shard or p % shard.count == shard.index
end

-- "I/N" for messages.
function M.text(shard) return shard and (shard.index .. "/" .. shard.count) or "all" end

return M
