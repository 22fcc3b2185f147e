-- klab.agent.args: a tool's arguments checked against its JSON schema,
-- the small part of JSON Schema klab's tools use: an object with
-- properties of type string (maxLength, enum), integer, number or boolean,
-- required names and no other property.
--
--   args.check(schema, value) -> the arguments (a table) | nil, why
--
-- why is one line for the agent: the argument and what is wrong with it.

local errors = require "klab.errors"

local M = {}

local IS = {
  string = function(v) return type(v) == "string" end,
  integer = function(v) return math.type(v) == "integer" or (math.type(v) == "float" and v == math.floor(v)) end,
  number = function(v) return type(v) == "number" and v == v and math.abs(v) ~= math.huge end,
  boolean = function(v) return type(v) == "boolean" end,
}

-- Whether t holds list entries (a JSON array), which an object never has.
local function is_list(t) return rawget(t, 1) ~= nil end

local function check_one(name, spec, v)
  if not IS[spec.type](v) then
    return ("argument '%s' must be a%s %s"):format(name, spec.type == "integer" and "n" or "", spec.type)
  end
  if spec.maxLength and #v > spec.maxLength then
    return ("argument '%s' is longer than %d characters"):format(name, spec.maxLength)
  end
  if spec.minimum and v < spec.minimum then return ("argument '%s' must be at least %s"):format(name, spec.minimum) end
  if spec.maximum and v > spec.maximum then return ("argument '%s' must be at most %s"):format(name, spec.maximum) end
  if spec.enum then
    for _, x in ipairs(spec.enum) do if x == v then return nil end end
    return ("argument '%s' must be one of %s"):format(name, table.concat(spec.enum, ", "))
  end
  return nil
end

function M.check(schema, value)
  if value == nil then value = {} end
  if type(value) ~= "table" or is_list(value) then return nil, "the arguments must be a JSON object" end
  local known = {}
  for name in pairs(schema.properties) do known[#known + 1] = name end
  table.sort(known)
  for k, v in pairs(value) do
    local spec = type(k) == "string" and schema.properties[k]
    if not spec then
      return nil, ("unknown argument '%s'%s (known: %s)"):format(tostring(k),
        errors.did_you_mean(tostring(k), known), table.concat(known, ", "))
    end
    local why = check_one(k, spec, v)
    if why then return nil, why end
  end
  for _, name in ipairs(schema.required or {}) do
    if value[name] == nil then return nil, ("missing argument '%s'"):format(name) end
  end
  return value
end

return M
