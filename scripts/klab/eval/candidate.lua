-- klab.eval.candidate: a candidate is device code plus an optional launch plan.
--
--   candidate.load(path)   a folder (one kernel.cu/kernel.ptx or a single
--                          .cu/.ptx file, and an optional plan.lua) or a file
--   candidate.new{code=, lang=, plan=, name=}
--
-- Returns {name=, lang="cuda"|"ptx", code=, plan=<string or nil>, hash=}.
-- The hash covers the language, the code and the plan, so the same candidate
-- sent twice is stored once.

local M = {}

local function read(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("a")
  f:close()
  return s
end

local function is_dir(path)
  local ok, _, code = os.rename(path, path)
  if not ok and code ~= 13 then return false end
  local f = io.open(path .. "/.", "r")
  if f then f:close() return true end
  return false
end

local function list(dir)
  local out = {}
  local p = io.popen('ls -1 "' .. dir:gsub('"', '\\"') .. '" 2>/dev/null')
  for name in p:lines() do out[#out + 1] = name end
  p:close()
  return out
end

local function lang_of(name)
  if name:match("%.ptx$") then return "ptx" end
  if name:match("%.cu$") or name:match("%.cuh$") then return "cuda" end
  return nil
end

-- The same hash the store keys candidates by (store_candidate_hash).
function M.hash(c)
  return require("klab.store").hash("klab.candidate.1", c.lang, c.code, c.plan)
end

function M.new(c)
  assert(type(c) == "table", "candidate.new expects a table")
  if type(c.code) ~= "string" or c.code == "" then return nil, "candidate has no device code" end
  if c.lang ~= "cuda" and c.lang ~= "ptx" then
    return nil, "candidate language must be 'cuda' or 'ptx', got " .. tostring(c.lang)
  end
  local out = { name = c.name or "candidate", lang = c.lang, code = c.code, plan = c.plan, source = c.source }
  out.hash = M.hash(out)
  return out
end

function M.load(path)
  if type(path) ~= "string" then return nil, "candidate path must be a string" end
  if is_dir(path) then
    local code_files, plan
    code_files = {}
    for _, name in ipairs(list(path)) do
      if lang_of(name) then code_files[#code_files + 1] = name end
      if name == "plan.lua" then plan = path .. "/plan.lua" end
    end
    local chosen
    for _, name in ipairs(code_files) do
      if name:match("^kernel%.") then chosen = name end
    end
    if not chosen then
      if #code_files == 0 then
        return nil, path .. ": no device code (expected kernel.cu, kernel.ptx or one .cu/.ptx file)"
      elseif #code_files > 1 then
        return nil, path .. ": several device code files (" .. table.concat(code_files, ", ") ..
          "); name the one to use kernel.cu or kernel.ptx"
      end
      chosen = code_files[1]
    end
    local code, err = read(path .. "/" .. chosen)
    if not code then return nil, err end
    local plan_src
    if plan then
      plan_src, err = read(plan)
      if not plan_src then return nil, err end
    end
    return M.new { name = path:match("([^/]+)/*$"), lang = lang_of(chosen), code = code, plan = plan_src,
      source = path }
  end
  local lang = lang_of(path)
  if not lang then
    local f = io.open(path, "rb")
    if not f then return nil, path .. ": no such file or directory" end
    f:close()
    return nil, path .. ": not device code (expected a folder, a .cu or a .ptx file)"
  end
  local code, err = read(path)
  if not code then return nil, err end
  return M.new { name = path:match("([^/]+)$"), lang = lang, code = code, source = path }
end

return M
