-- klab.eval.task_check: a folder of tasks checked without a GPU, as
-- `klab tasks --check DIR...` and the library's own test do it.
--
--   local problems, counts = require("klab.eval.task_check").run(dirs [, {archs = {...}}])
--
-- For every task file under each dir: it loads; for every variant and
-- target, the reference compiles and its plans run (the full and the
-- sampled run, and derive), a shipped baseline compiles and its plan runs;
-- a cuDNN graph baseline describes (dnn.graph_describe, no GPU); and every
-- samples/ and bad/ folder's expected.lua names real tasks, real verdicts
-- and candidates that load and, unless they are meant to be refused at
-- build time, build and plan. problems: {{file=, field=, message=}, ...}
-- in the order found; counts = {files=, tasks=, variants=, candidates=}.

local task = require "klab.task"
local prepare = require "klab.eval.prepare"
local stages = require "klab.eval.stages"
local candidate = require "klab.eval.candidate"
local verdict = require "klab.eval.verdict"

local M = {}

M.ARCHS = { "sm_90a", "sm_100a" }

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

-- The caller's stages (build and plan) of an evaluation, without a GPU.
local function prepared(t, cand, arch)
  local run = { task = t, cand = cand, arch = arch, opts = {}, result = { stages = {} } }
  local ok = stages.run_caller(run)
  prepare.cleanup(run)
  prepare.finish(run)
  return ok, run
end
M.prepared = prepared

-- Which field of a task a failed preparation points at.
local function field_of(run)
  local st = run.result.stage or ""
  if st == "build" and not run.cand then return "reference" end
  if st == "plan" then return "plan" end
  return st ~= "" and st or "reference"
end

-- The samples/expected.lua and bad/expected.lua files under dir (klab.fs
-- lists folders; links are not followed).
local function expected_lists(dir)
  local fs = require "klab.fs"
  local out = {}
  local function walk(d, depth)
    if depth > 8 then return end
    for _, e in ipairs(fs.list(d) or {}) do
      local p = d .. "/" .. e.name
      if e.type == "dir" then
        walk(p, depth + 1)
      elseif e.type == "file" and e.name == "expected.lua" and (d:match("/samples$") or d:match("/bad$")) then
        out[#out + 1] = p
      end
    end
  end
  walk((dir:gsub("/+$", "")), 0)
  table.sort(out)
  return out
end

-- What an entry of expected.lua may hold: a folder's name beside the list
-- (never a path), a task's name, a variant's name, a verdict, why, and for
-- the GPU checks the text its reason holds and the speedup it stays below.
local ENTRY_NAMES = { "name", "task", "variant", "verdict", "why", "reason", "max_speedup", "unsupported" }
local ENTRY_FIELDS = {}
for _, k in ipairs(ENTRY_NAMES) do ENTRY_FIELDS[k] = true end
local function plain_name(s) return type(s) == "string" and s:match("^[%w_][%w_%.%-]*$") ~= nil and not s:find("..", 1, true) end

-- The first thing wrong with an entry's form, as {field =, message =}, or nil.
local function entry_problem(e)
  if type(e) ~= "table" then return { field = "entry", message = "is not a table {name =, task =, verdict =}" } end
  for k in pairs(e) do
    if not ENTRY_FIELDS[k] then
      return { field = tostring(k), message = ("unknown field '%s' (fields: %s)%s"):format(tostring(k),
        table.concat(ENTRY_NAMES, ", "), require("klab.errors").did_you_mean(k, ENTRY_NAMES)) }
    end
  end
  if not plain_name(e.name) then
    return { field = "name", message = "a sample is a folder beside the list, named without '/' or '..'" }
  end
  if not (type(e.task) == "string" and task.is_name(e.task) and not e.task:find("/", 1, true)) then
    return { field = "task", message = task.not_a_name(e.task) }
  end
  if e.variant ~= nil and not plain_name(e.variant) then
    return { field = "variant", message = ("'%s' is not a variant's name"):format(tostring(e.variant)) }
  end
  for _, k in ipairs { "why", "reason" } do
    if e[k] ~= nil and type(e[k]) ~= "string" then return { field = k, message = "is text" } end
  end
  if e.max_speedup ~= nil and type(e.max_speedup) ~= "number" then
    return { field = "max_speedup", message = "is a number" }
  end
  -- Variants the sample's own plan refuses by design (the GPU suite's
  -- sweep leaves them out): a list of variants' names.
  if e.unsupported ~= nil then
    if type(e.unsupported) ~= "table" then return { field = "unsupported", message = "is a list of variants' names" } end
    for _, v in ipairs(e.unsupported) do
      if not plain_name(v) then
        return { field = "unsupported", message = ("'%s' is not a variant's name"):format(tostring(v)) }
      end
    end
  end
  return nil
end

function M.run(dirs, opts)
  opts = opts or {}
  local archs = opts.archs or M.ARCHS
  local problems, counts = {}, { files = 0, tasks = 0, variants = 0, candidates = 0 }
  -- One line per mistake: the same reason for more variants or targets
  -- (a reference that does not compile) is counted on the first line.
  local seen = {}
  local function problem(file, field, message, reason)
    message = tostring(message):gsub("\n.*", "")
    local key = file .. "\0" .. field .. "\0" .. tostring(reason or message):gsub("sm_%d+a?", "")
    local p = seen[key]
    if p then
      p.more = p.more + 1
      return
    end
    p = { file = file, field = field, message = message, more = 0 }
    seen[key] = p
    problems[#problems + 1] = p
  end
  for _, dir in ipairs(dirs) do
    dir = dir:gsub("/+$", "")
    -- A folder of families (like tasks/), or one family's folder: then its
    -- parent is the root and only its own files count.
    local root, only = dir, nil
    local fs = require "klab.fs"
    for _, e in ipairs(fs.list(dir) or {}) do
      if e.type == "file" and e.name:match("%.lua$") then root, only = dir:match("^(.*)/[^/]+$") or ".", dir .. "/" end
    end
    local function mine(file) return not only or tostring(file):sub(1, #only) == only end
    for _, f in ipairs(task.files(root)) do if mine(f) then counts.files = counts.files + 1 end end
    local listed, errs = task.list(root)
    local all = {}
    for _, x in ipairs(listed) do if mine(x.file) then all[#all + 1] = x end end
    for _, e in ipairs(errs) do
      local file, rest = tostring(e):match("^([^:]+%.lua):(.*)$")
      if mine(file or dir) then problem(file or dir, "load", rest and rest:gsub("^%s*", "") or e) end
    end
    local bases, seen_ref = {}, {}
    for _, x in ipairs(all) do
      counts.variants = counts.variants + 1
      if not bases[x.base] then bases[x.base], counts.tasks = true, counts.tasks + 1 end
      for _, arch in ipairs(archs) do
        local ok, run = prepared(x, nil, arch)
        if not ok then
          problem(x.file, field_of(run), ("%s on %s: %s"):format(x.name, arch, tostring(run.result.reason)),
            run.result.reason)
        elseif x.baseline.kind == "shipped" and not run.job.task.baseline.kernel then
          problem(x.file, "baseline", ("%s on %s: the shipped baseline does not build or plan: %s"):format(x.name, arch,
            tostring(run.baseline_error)), run.baseline_error)
        elseif x.baseline.shipped and not run.job.task.baseline.shipped.kernel then
          problem(x.file, "baseline.shipped", ("%s on %s: the shipped baseline kernel does not build or plan: %s")
            :format(x.name, arch, tostring(run.shipped_error)), run.shipped_error)
        end
        seen_ref[x.reference.path .. arch] = true
      end
      -- The library calls: the baseline's own, or those before a shipped
      -- kernel (a composed task's product or convolution, an MLP's layers:
      -- baseline.prologue, one or a list), each described without a GPU.
      local pro = x.baseline.prologue
      local calls = pro and (pro.lib and { pro } or pro) or { x.baseline }
      for i, call in ipairs(calls) do
        local field = not pro and "baseline.spec" or pro.lib and "baseline.prologue" or ("baseline.prologue[%d]"):format(i)
        if call.lib == "cudnn" and call.op == "graph" then
          local pok, d, err = pcall(require("klab.dnn").graph_describe, task.plain(call.spec))
          if not pok then d, err = nil, d end
          if not d then problem(x.file, field, ("%s: the cuDNN graph does not describe: %s"):format(x.name, err)) end
        elseif call.lib == "cublaslt" then
          -- A step's operand may be an earlier step's workspace (fp32).
          local by_name = {}
          for name, b in pairs(x.buffers) do by_name[name] = b end
          local view = pro and { dims = x.dims, buffers = x.buffers, baseline = call, buffer_by_name = setmetatable(by_name,
            { __index = function() return { dtype = "f32" } end }) } or x
          local d, err = require("klab.eval.baselines.cublaslt").describe(view)
          if not d then
            problem(x.file, field, ("%s: the cuBLASLt matmul does not describe: %s"):format(x.name, err))
          end
        end
      end
      if not (x.flops > 0 and x.bytes > 0) then problem(x.file, "flops", x.name .. ": counts no FLOPs or no bytes") end
    end
    -- An entry names a task of the folder being checked first, then of the
    -- search path (--tasks, $KLAB_TASKS, the repository's tasks/).
    local lookup = { path = { root, table.unpack(task.path()) } }
    for _, list in ipairs(expected_lists(dir)) do
      local folder = list:match("^(.*)/expected%.lua$")
      -- Run like a task file, in the task sandbox: its problem names the file.
      local ok, entries = pcall(task.returned, list)
      if not ok or type(entries) ~= "table" then
        problem(list, "load", ok and "does not return a list" or (tostring(entries):gsub("^" .. list:gsub("%p", "%%%0")
          .. ": ", "")))
      else
        for i, e in ipairs(entries) do
          counts.candidates = counts.candidates + 1
          local where = ("entry %d (%s)"):format(i, type(e) == "table" and tostring(e.name) or "?")
          local bad = entry_problem(e)
          if bad then
            problem(list, bad.field, where .. ": " .. bad.message)
            goto next_entry
          end
          if not verdict.valid(e.verdict) then
            problem(list, "verdict", ("%s: '%s' is not a verdict%s"):format(where, tostring(e.verdict),
              require("klab.errors").did_you_mean(e.verdict, verdict.NAMES)))
          end
          local tok, tf = pcall(task.load, e.task, lookup)
          local x = tok and (e.variant and select(2, pcall(task.get, e.task .. "/" .. e.variant, lookup)) or tf.tasks[1])
          if type(x) ~= "table" then
            problem(list, "task", ("%s: no task '%s%s'"):format(where, tostring(e.task), e.variant and "/" .. e.variant or ""))
          elseif not exists(folder .. "/" .. tostring(e.name)) then
            problem(list, "name", ("%s: no folder %s/%s"):format(where, folder, tostring(e.name)))
          else
            local c, err = candidate.load(folder .. "/" .. e.name)
            if not c then
              problem(list, "name", ("%s: %s"):format(where, tostring(err)))
            else
              local pok, run = prepared(x, c, archs[1])
              local refused = verdict.before_gpu(e.verdict)
              -- This machine cannot build that language (no triton installed,
              -- no way to confine its compiler): not the folder's mistake.
              local build = run.result.stages.build
              local machine = build and build.code == "EUNSUPPORTED"
              if not pok and not refused and not machine then
                problem(list, "name", ("%s on %s: %s"):format(where, x.name, tostring(run.result.reason)))
              end
            end
          end
          ::next_entry::
        end
      end
    end
  end
  for _, p in ipairs(problems) do
    if p.more > 0 then p.message = p.message .. (" (and %d more variant%s or target%s)"):format(p.more,
      p.more == 1 and "" or "s", p.more == 1 and "" or "s") end
    p.more = nil
  end
  return problems, counts
end

return M
