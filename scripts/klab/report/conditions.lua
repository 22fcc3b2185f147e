-- klab.report.conditions: the conditions a report sets side by side
-- (`klab report --by VAR[,VAR]`), and the paired comparison of two.
--
--   conditions.check(vars, configs)         -> nil | why (a mistake: unknown VAR)
--   conditions.relabel(trajs, vars, configs) -> the label ("Condition (tag)")
--   conditions.compare(trajs, opts)          -> rows (below)
--
-- A condition is the values of the VARs of a trajectory: model, tag, task,
-- family (the task's family in the library, else its name up to the first
-- "/" or "_"), arch, experiment, turns (the experiment's turn limit),
-- template (the prompt's user template), policy ("tools" for a tool-calling
-- study, klab.agent.study; "turns" for the turn-based loop), language (the
-- language the study asked the trajectory's kernels in,
-- klab.experiment.languages), or any field of the experiment's
-- spec that is one value per experiment (its stored config: mode, select,
-- feedback, ...; a table is shown as JSON; a list such as tags or models
-- is refused, as it names every condition at once). relabel writes the
-- label into each trajectory's `model` (every table and figure groups by
-- it) and puts every trajectory into one section, so the conditions are
-- side by side whatever experiment or store they came from.

local metrics = require "klab.report.metrics"
local json = require "klab.json"

local M = {}

M.BUILTIN = { "model", "tag", "task", "family", "arch", "experiment", "turns", "template", "policy", "language" }
local BUILTIN = {}
for _, v in ipairs(M.BUILTIN) do BUILTIN[v] = true end

local function config_of(configs, tr)
  return configs[tr.experiment] or {}
end

local function family(task)
  local ok, t = pcall(function() return require("klab.task").get(task) end)
  if ok and type(t) == "table" and t.family then return t.family end
  return (task:match("^([^/_]+)")) or task
end

local function value(tr, var, configs)
  if var == "model" or var == "tag" or var == "task" or var == "arch" or var == "experiment" or var == "language" then
    return tostring(tr[var])
  elseif var == "family" then
    return family(tr.task)
  elseif var == "turns" then
    return tostring(tr.max_turns or "?")
  elseif var == "policy" then
    -- How the model worked: "tools" (klab.agent.study), else turn by turn.
    return tostring(config_of(configs, tr).policy or "turns")
  elseif var == "template" then
    -- Named by its file name: a template given by its absolute path is
    -- still "mine.md" in the tables.
    local p = config_of(configs, tr).prompt
    return (tostring(type(p) == "table" and p.user or "task.md"):match("([^/]*)$"))
  end
  local v = config_of(configs, tr)[var]
  if type(v) == "table" then return json.encode(v) end
  return tostring(v)
end

-- A field of a stored config that holds a list (models, tasks, tags): the
-- same for every turn of an experiment, so grouping by it would pool the
-- conditions it lists into one.
local function is_list(v) return type(v) == "table" and v[1] ~= nil end

-- nil, or the mistake in vars (a name no experiment's spec has, or a field
-- that lists the values of a condition instead of being one).
function M.check(vars, configs)
  if #vars == 0 then return "--by needs at least one name" end
  local names, lists = {}, {}
  for _, v in ipairs(M.BUILTIN) do names[#names + 1] = v end
  local fields = {}
  for _, c in pairs(configs) do
    for k, v in pairs(c) do
      if is_list(v) then lists[k] = true else fields[k] = true end
    end
  end
  for k in pairs(fields) do
    if not BUILTIN[k] and not lists[k] then names[#names + 1] = k end
  end
  table.sort(names)
  local dym = require("klab.errors").did_you_mean
  for _, var in ipairs(vars) do
    if not BUILTIN[var] and lists[var] then
      return ("--by: '%s' is a list in the experiment's config, the same for every turn, not a condition "
        .. "variable%s (known: %s)"):format(var, dym(var, names), table.concat(names, ", "))
    elseif not BUILTIN[var] and not fields[var] then
      return ("--by: no condition variable '%s'%s (known: %s)"):format(var, dym(var, names),
        table.concat(names, ", "))
    end
  end
end

function M.relabel(trajs, vars, configs)
  local section = "by " .. table.concat(vars, ", ")
  for _, tr in ipairs(trajs) do
    local parts = {}
    for i, var in ipairs(vars) do parts[i] = value(tr, var, configs) end
    -- The model's own name stays known (the report's provenance lists it).
    tr.model_name = tr.model_name or tr.model
    tr.model, tr.experiment = table.concat(parts, " / "), section
  end
  table.sort(trajs, function(a, b)
    for _, f in ipairs { "arch", "model", "task", "tag", "replica", "id" } do
      if a[f] ~= b[f] then return tostring(a[f]) < tostring(b[f]) end
    end
    return false
  end)
  return ("Condition (%s)"):format(table.concat(vars, ", "))
end

-- The Wilson-based interval of a difference of two independent
-- proportions (Newcombe 1998, method 10).
local function newcombe(k1, n1, k2, n2, level)
  local a, b = metrics.wilson(k1, n1, level), metrics.wilson(k2, n2, level)
  if not a or not b then return nil end
  local p1, p2 = k1 / n1, k2 / n2
  local d = p1 - p2
  return { d - math.sqrt((p1 - a[1]) ^ 2 + (b[2] - p2) ^ 2), d + math.sqrt((a[2] - p1) ^ 2 + (p2 - b[1]) ^ 2) }
end

-- One condition's trajectories on one task: how many have a correct turn
-- within the limit, how many there are, and the best speedup of any.
local function tally(trajs, limit)
  local k, best = 0, nil
  for _, tr in ipairs(trajs) do
    if metrics.correct(tr, limit) then k = k + 1 end
    local s = metrics.best(tr, limit)
    if s and (not best or s > best) then best = s end
  end
  return k, #trajs, best
end

-- compare(trajs, {limit, B, seed, level}) -> rows, one per arch and pair
-- (the first condition against each other one): {arch, a, b, tasks (the
-- tasks both ran), n_a, n_b (their trajectories on those tasks), rate_a,
-- rate_b (with a correct turn within the limit), diff = rate_a - rate_b,
-- diff_ci (Newcombe's interval from the two Wilson intervals), ratio (the
-- geometric mean over the tasks both have a speedup on of a's best speedup
-- over b's), ratio_tasks, ratio_ci (a bootstrap over those tasks)}.
function M.compare(trajs, opts)
  opts = opts or {}
  local limit = opts.limit or metrics.max_turns(trajs)
  local rows = {}
  for _, ga in ipairs(metrics.group(trajs, { "arch" })) do
    local conds = metrics.group(ga.items, { "model" })
    if #conds >= 2 then
      local by = {}
      for _, c in ipairs(conds) do
        by[c.model] = {}
        for _, tg in ipairs(metrics.group(c.items, { "task" })) do by[c.model][tg.task] = tg.items end
      end
      local first = conds[1].model
      for i = 2, #conds do
        local other = conds[i].model
        local tasks, ka, na, kb, nb, ratios = {}, 0, 0, 0, 0, {}
        for task, ta in pairs(by[first]) do
          local tb = by[other][task]
          if tb then
            tasks[#tasks + 1] = task
            local ca, ta_n, ba = tally(ta, limit)
            local cb, tb_n, bb = tally(tb, limit)
            ka, na, kb, nb = ka + ca, na + ta_n, kb + cb, nb + tb_n
            if ba and bb and ba > 0 and bb > 0 then ratios[#ratios + 1] = { task = task, r = ba / bb } end
          end
        end
        table.sort(tasks)
        table.sort(ratios, function(x, y) return x.task < y.task end)
        local rs = {}
        for j, x in ipairs(ratios) do rs[j] = x.r end
        local ci = #rs > 1 and metrics.bootstrap(rs, function(s) return metrics.geomean(s) end, {
          B = opts.B, seed = opts.seed, level = opts.level, key = "compare\0" .. ga.arch .. "\0" .. first .. "\0" .. other,
        })[1] or nil
        rows[#rows + 1] = {
          arch = ga.arch, a = first, b = other, tasks = #tasks, n_a = na, n_b = nb,
          rate_a = na > 0 and ka / na or nil, rate_b = nb > 0 and kb / nb or nil,
          diff = na > 0 and nb > 0 and ka / na - kb / nb or nil,
          diff_ci = na > 0 and nb > 0 and newcombe(ka, na, kb, nb, opts.level) or nil,
          ratio = metrics.geomean(rs), ratio_tasks = #rs, ratio_ci = ci,
        }
      end
    end
  end
  return rows
end

return M
