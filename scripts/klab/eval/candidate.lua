-- klab.eval.candidate: a candidate is device code plus an optional launch plan.
--
--   candidate.load(path)   a folder (one kernel.cu/kernel.ptx/kernel.py or a
--                          single .cu/.ptx/.py file, and an optional plan.lua)
--                          or a file
--   candidate.new{code=, lang=, plan=, name=}
--
-- Returns {name=, lang=<a name of klab.lang>, code=, plan=<string or nil>, hash=,
-- file=, plan_file=} (file and plan_file: the paths read, for messages that
-- name the user's files). The hash covers the language, the code and the
-- plan, so the same candidate sent twice is stored once.
--
-- A candidate folder is only the regular files inside it, each at most
-- MAX_BYTES: a code file or plan.lua that is a symbolic link leaving the
-- folder, a FIFO, a device, a folder or too large is refused with the path
-- and the reason, and nothing is read from it. A folder with two languages'
-- code files (kernel.cu, kernel.ptx, kernel.py) is refused too (which one is
-- meant is not klab's guess). The languages, their file names and suffixes
-- are klab.lang's; docs/languages.md says what each language may hold.

local fs = require "klab.fs"
local lang = require "klab.lang"
local one_of = require("klab.errors").one_of

local M = {}

M.MAX_BYTES = 4 * 1024 * 1024

local lang_of = lang.of_file

-- Each registered language's f(language module) (its file, its suffix, ...).
-- f of every language, each value once (languages may share a file name).
local function each(f)
  local out, seen = {}, {}
  for _, n in ipairs(lang.NAMES) do
    local v = f(lang.get(n), n)
    if not seen[v] then
      seen[v] = true
      out[#out + 1] = v
    end
  end
  return out
end

-- A candidate's file is its own, not a second name (hard link) of a host file.
local ONE_NAME = { one_name = true }

-- The text of entry e of folder dir (real: dir resolved), or nil, why.
local function read_member(dir, real, e)
  local path = dir .. "/" .. e.name
  if e.type == "link" then
    local target = fs.realpath(path)
    if not target then return nil, path .. ": a symbolic link to nothing" end
    if target:sub(1, #real + 1) ~= real .. "/" then
      return nil, path .. ": a symbolic link that leaves the candidate folder; a candidate is only the files inside it"
    end
    local text, err = fs.read(target, M.MAX_BYTES, ONE_NAME)
    if not text then return nil, (err:gsub("^" .. target:gsub("%p", "%%%0"), path)) end
    return text
  end
  return fs.read(path, M.MAX_BYTES, ONE_NAME)
end

-- The same hash the store keys candidates by (store_candidate_hash).
function M.hash(c)
  return require("klab.store").hash("klab.candidate.1", c.lang, c.code, c.plan)
end

function M.new(c)
  assert(type(c) == "table", "candidate.new expects a table")
  if type(c.code) ~= "string" or c.code == "" then return nil, "candidate has no device code" end
  if not lang.get(c.lang) then
    return nil, "candidate language must be " .. one_of(each(function(_, n) return "'" .. n .. "'" end)) .. ", got "
      .. tostring(c.lang)
  end
  local out = { name = c.name or "candidate", lang = lang.refine(c.lang, c.code), code = c.code, plan = c.plan,
    source = c.source, file = c.file, plan_file = c.plan_file }
  out.hash = M.hash(out)
  return out
end

local function load_folder(path)
  local dir = path:gsub("/+$", "")
  if dir == "" then dir = "/" end
  local real, rerr = fs.realpath(dir)
  if not real then return nil, rerr end
  local entries, lerr = fs.list(dir)
  if not entries then return nil, lerr end
  local code_files, by_name, plan = {}, {}, nil
  for _, e in ipairs(entries) do
    if lang_of(e.name) then
      code_files[#code_files + 1] = e.name
      by_name[e.name] = e
    elseif e.name == "plan.lua" then
      plan = e
    end
  end
  local kernels = {}
  local files = each(function(l) return l.file end)
  for _, name in ipairs(files) do
    if by_name[name] then kernels[#kernels + 1] = name end
  end
  if #kernels > 1 then
    return nil, dir .. ": both " .. table.concat(kernels, " and ") .. "; keep one ("
      .. table.concat(each(function(l) return l.file .. " for " .. l.title end), ", ") .. ")"
  end
  local suffixes = table.concat(each(function(l) return l.suffixes[1] end), "/")
  local chosen
  for _, name in ipairs(code_files) do
    if name:match("^kernel%.") then chosen = name end
  end
  if not chosen then
    if #code_files == 0 then
      return nil, dir .. ": no device code (expected " .. table.concat(files, ", ") .. " or one " .. suffixes .. " file)"
    elseif #code_files > 1 then
      return nil, dir .. ": several device code files (" .. table.concat(code_files, ", ") ..
        "); name the one to use " .. one_of(files)
    end
    chosen = code_files[1]
  end
  local code, err = read_member(dir, real, by_name[chosen])
  if not code then return nil, err end
  local plan_src
  if plan then
    plan_src, err = read_member(dir, real, plan)
    if not plan_src then return nil, err end
  end
  return M.new { name = dir:match("([^/]+)$") or dir, lang = lang_of(chosen, code), code = code, plan = plan_src,
    source = path, file = dir .. "/" .. chosen, plan_file = plan and (dir .. "/plan.lua") or nil }
end

function M.load(path)
  if type(path) ~= "string" then return nil, "candidate path must be a string" end
  -- The path the user named may itself be a link: its target is what was meant.
  local kind = fs.type(path)
  if kind == "link" then
    local real = fs.realpath(path)
    kind = real and fs.type(real)
  end
  if kind == "dir" then return load_folder(path) end
  if not kind then return nil, path .. ": no such file or directory" end
  local name = lang_of(path)
  if not name then
    return nil, path .. ": not device code (expected a folder, a " .. one_of(each(function(l) return l.suffixes[1] end))
      .. " file)"
  end
  local real, rerr = fs.realpath(path)
  if not real then return nil, rerr end
  local code, err = fs.read(real, M.MAX_BYTES, ONE_NAME)
  if not code then return nil, err end
  return M.new { name = path:match("([^/]+)$"), lang = name, code = code, source = path, file = path }
end

return M
