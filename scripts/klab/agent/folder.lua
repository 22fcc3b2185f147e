-- klab.agent.folder: where an agent's candidates may be. An agent (a
-- coding agent through `klab mcp`, or a model in a tool-calling study) names
-- a candidate by a path inside one folder, its workspace; klab reads
-- nothing outside it. The candidate itself is then held to the candidate
-- rules (klab.eval.candidate: only the regular files of its folder, no link
-- that leaves it, a size cap), the same checks `klab eval` applies.
--
--   folder.root(dir)            -> the workspace's real path | nil, why
--   folder.candidate(root, p)   -> a candidate (klab.eval.candidate) | nil, why
--
-- p is relative to the workspace. Refused, with a one-line reason that
-- names p as the agent wrote it: an absolute path, a path that climbs out
-- (../x), a link whose target is outside, a path that does not exist, and
-- whatever the candidate rules refuse.

local fs = require "klab.fs"
local candidate = require "klab.eval.candidate"

local M = {}

-- The longest path an agent may name (a path is a name, not data).
M.MAX_PATH = 1024

function M.root(dir)
  local real, why = fs.realpath(dir)
  if not real then return nil, "the workspace " .. tostring(dir) .. ": " .. tostring(why) end
  if fs.type(real) ~= "dir" then return nil, "the workspace " .. tostring(dir) .. " is not a folder" end
  -- A workspace is the agent's folder, never the whole host.
  if real == "/" then return nil, "the workspace may not be / (name the agent's own folder)" end
  return real
end

-- Whether real is root or lies under it.
local function inside(root, real)
  return real == root or real:sub(1, #root + 1) == root .. "/"
end

-- The text of msg with the workspace's real path left out, so that a
-- reason names the candidate as the agent named it.
local function relative(root, msg)
  msg = tostring(msg)
  local at = 1
  local prefix = root .. "/"
  local out = {}
  while true do
    local i = msg:find(prefix, at, true)
    if not i then break end
    out[#out + 1] = msg:sub(at, i - 1)
    at = i + #prefix
  end
  out[#out + 1] = msg:sub(at)
  return (table.concat(out):gsub("[\r\n]+", " "))
end

-- Whether the relative path p climbs above where it starts (a/../../b),
-- as its names read, before any link is looked at.
local function climbs(p)
  local depth = 0
  for part in p:gmatch("[^/]+") do
    if part == ".." then depth = depth - 1 elseif part ~= "." then depth = depth + 1 end
    if depth < 0 then return true end
  end
  return false
end

function M.candidate(root, p)
  if type(p) ~= "string" or p == "" then return nil, "candidate: a path inside the workspace is needed" end
  if #p > M.MAX_PATH or p:find("[%z\r\n]") then
    return nil, "candidate: not a path (at most " .. M.MAX_PATH .. " bytes, no control characters)"
  end
  if p:sub(1, 1) == "/" or climbs(p) then
    return nil, ("candidate %s: outside the workspace; name a folder inside it by a relative path"):format(p)
  end
  local real = fs.realpath(root .. "/" .. p)
  -- One answer for a missing path and a link out of the workspace, so that
  -- a link cannot be used to learn which host files exist.
  if not real or not inside(root, real) then
    return nil, ("candidate %s: no file or folder inside the workspace (links that leave it are not followed)"):format(p)
  end
  -- Loaded by its real path: a link swapped after the check above cannot
  -- lead the read elsewhere (the rules refuse links inside the folder).
  local c, why = candidate.load(real)
  if not c then return nil, "candidate " .. p .. ": " .. relative(root, why) end
  c.source = p
  c.file = c.file and relative(root, c.file)
  c.plan_file = c.plan_file and relative(root, c.plan_file)
  return c
end

return M
