-- tests/gpu/oracle_check.lua: every task that claims a KernelBench problem
-- exactly carries its semantics as one PyTorch expression (its `oracle`,
-- klab.task.oracle); here torch evaluates it on the task's own inputs and the
-- result is compared with the task's fp64 reference under the task's
-- tolerance, by the judge's own comparison. A reference that disagrees with
-- its oracle fails.
--
--   build/klab tests/gpu/oracle_check.lua [--family F]... [--max-gib N]
--        (standalone; exit 1 on a disagreement, 3 without a GPU or torch)
--   local rows = dofile("tests/gpu/oracle_check.lua").run{ families = nil, max_bytes = nil }
--        (from tests/gpu/check.lua)
--
-- Each exact task is checked on its variant tagged "small" and on every
-- variant tagged "kernelbench" whose buffers fit max_bytes (default 5 GiB:
-- they cross the host, as files torch reads, and torch holds them in fp64).
-- The inputs are the first correctness trial's (drawn from a fresh seed,
-- derived inputs made); torch is python3's (or $KLAB_PYTHON's).

local task = require "klab.task"
local oracle = require "klab.task.oracle"
local spawn = require "klab.spawn"

local M = {}

M.MAX_BYTES = 5 << 30

local function root() return os.getenv("KLAB_ROOT") or "." end

-- The python with torch: path, version line | nil, why.
function M.torch()
  local py = os.getenv("KLAB_PYTHON") or spawn.which("python3")
  if not py then return nil, "no python3 on PATH (set KLAB_PYTHON)" end
  local r = spawn.run { argv = { py, "-c", "import torch; print(torch.__version__, torch.cuda.is_available())" },
    stderr = "stdout", timeout = 180 }
  if not (r and r.ok) then
    local last = r and (r.stdout or ""):match("([^\n]+)\n?$") or "did not start"
    return nil, ("torch is not importable by %s (%s)"):format(py, tostring(last))
  end
  return py, (r.stdout:gsub("%s+$", ""))
end

-- The variants to check: the small one, and the kernelbench ones that fit.
local function chosen(file, max_bytes)
  local out, skipped = {}, {}
  for _, x in ipairs(file.tasks) do
    local small, kb = false, false
    for _, tag in ipairs(x.tags) do
      small = small or tag == "small"
      kb = kb or tag == "kernelbench"
    end
    local bytes = 0
    for _, b in pairs(x.buffers) do bytes = bytes + b.bytes end
    if small or (kb and bytes <= max_bytes) then
      out[#out + 1] = x
    elseif kb then
      skipped[#skipped + 1] = ("%s (%.1f GiB)"):format(x.name, bytes / (1 << 30))
    end
  end
  return out, skipped
end

local function write(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
end

-- One variant: its reference and its oracle on one input set. true | false,
-- detail | nil, why (could not run).
local function check_one(x, py)
  local prepare = require "klab.eval.prepare"
  local inputs = require "klab.eval.inputs"
  local device = require "klab.eval.device"
  local S = require("klab.eval.worker_state").S
  local text, perr = oracle.program(x)
  if not text then return nil, perr end
  local run = { task = x, arch = S.props.arch, opts = {}, result = { stages = {} } }
  if not require("klab.eval.stages").run_caller(run) then
    prepare.cleanup(run)
    return nil, "the reference does not build or plan: " .. tostring(run.result.reason)
  end
  local dir = require("klab.fs").mkdtemp("klab-oracle-")
  local outs = {}
  local function finish(...)
    device.free_all(outs)
    prepare.cleanup(run)
    require("klab.sys").remove_tree(dir)
    return ...
  end
  local spec = run.job.task
  local ts = inputs.task_state(run.job)
  local set, serr = inputs.input_set(spec, ts, run.job.trials[1])
  if not set then return finish(nil, "inputs and reference: " .. tostring(serr)) end
  for name, g in pairs(set.bufs) do write(dir .. "/" .. name .. ".bin", g.buf:download(g.bytes, g.off)) end
  write(dir .. "/oracle.py", text)
  local r = spawn.run { argv = { py, dir .. "/oracle.py", dir }, stderr = "stdout", timeout = 600 }
  if not (r and r.ok) then
    inputs.drop_set(ts, set)
    return finish(nil, "the oracle did not run: " .. tostring(r and (r.stdout or ""):sub(-300) or "no python"))
  end
  -- The oracle's outputs go where a candidate's would, and the judge
  -- compares them with the reference.
  for _, b in ipairs(spec.buffers) do
    if b.role == "output" then
      local f = io.open(dir .. "/oracle_" .. b.name .. ".bin", "rb")
      local data = f and f:read("a")
      if f then f:close() end
      if not data or #data ~= b.bytes then
        inputs.drop_set(ts, set)
        return finish(nil, ("the oracle wrote %s bytes of %s, not %d"):format(data and #data or "no", b.name, b.bytes))
      end
      local g, gerr = device.galloc(b.name, b.bytes)
      if not g then
        inputs.drop_set(ts, set)
        return finish(nil, gerr)
      end
      outs[b.name] = g
      g.buf:upload(data, g.off)
    end
  end
  local rec = { outputs = {} }
  local ok, detail = inputs.compare_outputs(spec, set, outs, rec, "oracle")
  inputs.drop_set(ts, set)
  if ok == nil then return finish(nil, detail) end
  local worst = 0
  for _, c in pairs(rec.outputs) do worst = math.max(worst, c.max_abs or 0) end
  return finish(ok, ok and ("max |oracle - reference| %.3g"):format(worst) or detail)
end

-- rows: {name, true | false | nil (skipped), detail}.
function M.run(opts)
  opts = opts or {}
  local rows = {}
  local function row(name, ok, detail)
    rows[#rows + 1] = { name, ok, detail }
    io.stderr:write(string.format("[oracle] %-48s %s  %s\n", name, ok == nil and "skip" or (ok and "pass" or "FAIL"),
      detail or ""))
  end
  local py, ver = M.torch()
  if not py then
    row("oracles agree with references", nil, "skipped: " .. ver)
    return rows
  end
  local gok, why = require("klab.eval.worker_state").ensure_gpu()
  if not gok then
    row("oracles agree with references", nil, "skipped: no GPU (" .. tostring(why) .. ")")
    return rows
  end
  io.stderr:write("[oracle] torch " .. ver .. "\n")
  local families = {}
  for _, f in ipairs(opts.families or {}) do families[f] = true end
  local all = task.list(root() .. "/tasks")
  local files, order = {}, {}
  for _, x in ipairs(all) do
    local exact = false
    for _, c in ipairs(x.kernelbench or {}) do exact = exact or c.exact end
    if exact and (not opts.families or families[x.family]) then
      if not files[x.base] then
        files[x.base] = { tasks = {} }
        order[#order + 1] = x.base
      end
      table.insert(files[x.base].tasks, x)
    end
  end
  for _, base in ipairs(order) do
    local list, skipped = chosen(files[base], opts.max_bytes or M.MAX_BYTES)
    for _, x in ipairs(list) do
      local ok, detail = check_one(x, py)
      if ok == true then
        row(x.name, true, detail)
      elseif ok == false then
        row(x.name, false, ("disagrees: %s: %d of %d elements off (max |d| %.3g at %s; atol %g, rtol %g)"):format(
          detail.buffer, detail.failed, detail.total, detail.max_abs or 0, tostring(detail.location), detail.atol,
          detail.rtol))
      else
        row(x.name, false, "could not check: " .. tostring(detail))
      end
    end
    for _, s in ipairs(skipped) do row(s, nil, "skipped: its buffers exceed the check's host round trip") end
  end
  return rows
end

-- The count line ("oracles: N agree ..., N disagree or could not run, N
-- skipped"), the disagreements and the agreements.
function M.count_line(rows)
  local n = { pass = 0, fail = 0, skip = 0 }
  for _, r in ipairs(rows) do
    local k = r[2] == nil and "skip" or (r[2] and "pass" or "fail")
    n[k] = n[k] + 1
  end
  return ("oracles: %d agree with their references, %d disagree or could not run, %d skipped"):format(n.pass,
    n.fail, n.skip), n.fail, n.pass
end

local script = arg and arg[0] or ""
if script:find("oracle_check%.lua$") then
  local opts = {}
  local i = 1
  while arg[i] do
    if arg[i] == "--family" and arg[i + 1] then
      opts.families = opts.families or {}
      table.insert(opts.families, arg[i + 1])
      i = i + 2
    elseif arg[i] == "--max-gib" and tonumber(arg[i + 1]) then
      opts.max_bytes = math.floor(tonumber(arg[i + 1]) * (1 << 30))
      i = i + 2
    else
      io.stderr:write("usage: klab tests/gpu/oracle_check.lua [--family F]... [--max-gib N]\n")
      os.exit(2)
    end
  end
  local rows = M.run(opts)
  local line, bad = M.count_line(rows)
  print(line)
  if #rows == 1 and rows[1][2] == nil then os.exit(3) end
  os.exit(bad == 0 and 0 or 1)
end

return M
