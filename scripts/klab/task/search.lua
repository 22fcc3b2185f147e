-- klab.task.search: where task files are found. The search path is the
-- --tasks folders (use_path), then $KLAB_TASKS (dir1:dir2), then the
-- repository's tasks/; task files are exactly <root>/<dir>/<name>.lua.
--
--   search.path([opts]), search.use_path(dirs), search.default_root(),
--   search.files([root]), search.is_dir(path), search.exists(path)

local fs = require("klab.fs")

local M = {}

local function exists(path) return fs.type(path) ~= nil end
M.exists = exists

local function is_dir(path)
  local kind = fs.type(path)
  if kind == "link" then
    local real = fs.realpath(path)
    kind = real and fs.type(real)
  end
  return kind == "dir"
end
M.is_dir = is_dir

-- The repository's tasks/: ./tasks, a tasks/ entry of package.path,
-- $KLAB_SCRIPTS/../tasks, then tasks/ next to the build directory of the
-- running binary.
function M.default_root()
  if is_dir("tasks") then return "tasks" end
  for entry in (package.path or ""):gmatch("[^;]+") do
    local dir = entry:match("^(.*)/tasks/%?%.lua$")
    if dir and is_dir(dir .. "/tasks") then return dir .. "/tasks" end
  end
  local scripts = os.getenv("KLAB_SCRIPTS")
  if scripts and scripts ~= "" and is_dir(scripts .. "/../tasks") then return scripts .. "/../tasks" end
  local okp, sys = pcall(require, "klab.sys")
  local exe = okp and type(sys) == "table" and sys.exe and sys.exe()
  local dir = exe and exe:match("^(.*)/[^/]+$")
  while dir and dir ~= "" do
    if is_dir(dir .. "/tasks") and is_dir(dir .. "/scripts/klab") then return dir .. "/tasks" end
    dir = dir:match("^(.*)/[^/]+$")
  end
  return "tasks"
end

-- Folders a command's --tasks option named, searched first.
local extra_path = {}

-- Sets the folders given with --tasks (in order), searched before
-- $KLAB_TASKS and the repository's tasks/.
function M.use_path(dirs)
  extra_path = {}
  for i, d in ipairs(dirs or {}) do extra_path[i] = d end
end

-- The task search path: opts.path (a list) or opts.root (one folder) when
-- given, else the --tasks folders, then $KLAB_TASKS (dir1:dir2), then the
-- repository's tasks/. A task name found in several folders is taken from
-- the first.
function M.path(opts)
  opts = opts or {}
  local out, seen = {}, {}
  local function add(d)
    if d and d ~= "" and not seen[d] then
      seen[d] = true
      out[#out + 1] = d
    end
  end
  if opts.path then
    for _, d in ipairs(opts.path) do add(d) end
    return out
  end
  if opts.root then return { opts.root } end
  for _, d in ipairs(extra_path) do add(d) end
  for d in (os.getenv("KLAB_TASKS") or ""):gmatch("[^:]+") do add(d) end
  add(M.default_root())
  return out
end

-- A folder or a list of folders; nil: the search path.
local function roots_of(root)
  if root == nil then return M.path() end
  if type(root) == "table" then return root end
  return { root }
end

-- Task files are exactly <root>/<dir>/<name>.lua: deeper files (samples,
-- known-bad kernels, their plans) are not tasks, nor are _<name>.lua files.
-- With a list of folders, each folder's files in order.
function M.files(root)
  local out = {}
  for _, r in ipairs(roots_of(root)) do
    local here = {}
    for _, d in ipairs(fs.list(r) or {}) do
      if d.type == "dir" then
        for _, e in ipairs(fs.list(r .. "/" .. d.name) or {}) do
          if e.type == "file" and e.name:match("%.lua$") and not e.name:match("^_") then
            here[#here + 1] = r .. "/" .. d.name .. "/" .. e.name
          end
        end
      end
    end
    table.sort(here)
    for _, f in ipairs(here) do out[#out + 1] = f end
  end
  return out
end

-- Every task (all variants) under root (a folder, a list, or nil: the search
-- path), and the load errors of the files that failed. A task name found in

return M
