-- klab.experiment.sweep: every trajectory of a study in its fixed order,
-- with the key the store knows it by. The turn-based loop (klab.experiment)
-- and tool-calling studies (klab.agent.study) list theirs here, so that
-- `klab judge` finds either by the same keys.
--
--   sweep.list(s) -> {{m, g, tag, r, key, language}, ...}
--                    s: name, models, groups, languages (default {"cuda"}), tags, replicas, _check_signal
--   sweep.key(name, m, g, tag, r [, language]) -> the trajectory's key
--   sweep.stored(s) -> models, groups           as a study's config stores them (no retry settings)

local store_mod = require "klab.store"
local languages = require "klab.experiment.languages"

local M = {}

-- The default language is not part of the key: a study made before
-- languages were a condition, or one that adds languages to its CUDA C++
-- sweep, finds its CUDA C++ trajectories where they were.
function M.key(name, m, g, tag, r, language)
  if languages.other(language) == nil then
    return store_mod.hash("klab.trajectory.1", name, m.name, g.name, tag, tostring(r))
  end
  return store_mod.hash("klab.trajectory.1", name, m.name, g.name, tag, tostring(r), language)
end

function M.list(s)
  local list = {}
  for _, m in ipairs(s.models) do
    for _, g in ipairs(s.groups) do
      for _, language in ipairs(s.languages or { languages.DEFAULT }) do
        for _, tag in ipairs(s.tags) do
          for r = 1, s.replicas do
            if r % 4096 == 0 then s:_check_signal() end -- a signal stops a big listing too
            list[#list + 1] = { m, g, tag, r, M.key(s.name, m, g, tag, r, language), language }
          end
        end
      end
    end
  end
  return list
end

function M.stored(s)
  local models = {}
  for i, m in ipairs(s.models) do
    local c = {}
    for k, v in pairs(m) do if k ~= "retry" then c[k] = v end end
    models[i] = c
  end
  local groups = {}
  for i, g in ipairs(s.groups) do groups[i] = { name = g.name, workloads = g.workloads, gate = g.gate } end
  return models, groups
end

return M
