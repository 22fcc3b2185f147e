-- klab.agent.budget: what a model in a tool-calling study may spend, per
-- trajectory, and what it has spent.
--
--   budget.check(spec) -> limits | nil, why     limits from a study's spec.budgets
--   budget.new(limits, spent) -> b             spent: the counts a resumed trajectory had
--   b:refuse(tool) -> nil | why                 whether a call of tool may run now
--   b:spend(what, amount)                       tool_calls, submissions, tokens, wall_s, gpu_s
--   b:over() -> nil | name                      the limit a new request would pass (tokens, wall_s)
--   b.spent                                     {tool_calls=, submissions=, tokens=, wall_s=, gpu_s=}
--
-- A call over its budget is answered with why (a tool error the model
-- reads), never run; the study ends the trajectory after the model was
-- told once (klab.agent.study).

local M = {}

-- Each limit, its default (nil: none) and how a refusal reads.
M.LIMITS = {
  { name = "tool_calls", default = 30, what = "tool calls" },
  { name = "submissions", default = 3, what = "submissions" },
  { name = "tokens", what = "tokens (input and output, every request)" },
  { name = "wall_s", what = "seconds of wall time" },
  { name = "gpu_s", what = "seconds of GPU tools (run, profile, submit)" },
}

local BY = {}
for _, l in ipairs(M.LIMITS) do BY[l.name] = l end

function M.check(spec)
  if spec ~= nil and type(spec) ~= "table" then return nil, "budgets must be a table" end
  local out = {}
  for k, v in pairs(spec or {}) do
    if not BY[k] then
      local names = {}
      for i, l in ipairs(M.LIMITS) do names[i] = l.name end
      return nil, ("budgets: unknown limit '%s'%s (known: %s)"):format(tostring(k),
        require("klab.errors").did_you_mean(tostring(k), names), table.concat(names, ", "))
    end
    if type(v) ~= "number" or v ~= v or v <= 0 or v == math.huge then
      return nil, ("budgets.%s must be a positive, finite number"):format(k)
    end
  end
  for _, l in ipairs(M.LIMITS) do out[l.name] = (spec or {})[l.name] or l.default end
  return out
end

local B = {}
B.__index = B

function M.new(limits, spent)
  local s = {}
  for _, l in ipairs(M.LIMITS) do s[l.name] = (spent or {})[l.name] or 0 end
  return setmetatable({ limits = limits, spent = s }, B)
end

local function used_up(self, name)
  local lim = self.limits[name]
  if lim and self.spent[name] >= lim then
    return ("budget: %g of %g %s used; this call did not run"):format(self.spent[name], lim, BY[name].what)
  end
end

function B:refuse(tool)
  local why = used_up(self, "tool_calls")
  if why then return why .. "; end with a short text reply" end
  if tool == "submit" then
    why = used_up(self, "submissions")
    if why then return why .. "; your last submission stands" end
  end
  if tool == "run" or tool == "profile" or tool == "submit" then
    why = used_up(self, "gpu_s")
    if why then return why .. "; compile still works" end
  end
  return nil
end

function B:spend(what, amount) self.spent[what] = self.spent[what] + (amount or 1) end

function B:over()
  for _, name in ipairs { "tokens", "wall_s" } do
    if used_up(self, name) then return name end
  end
  return nil
end

return M
