-- tests/bench/attention_bench.lua: cuDNN attention through klab against
-- PyTorch's scaled-dot-product attention, and the sample solutions against
-- cuDNN, on a GPU machine. Prints three tables:
--
--   1. for every attention task and every cuDNN library found (klab's own
--      search order, then PyTorch's nvidia.cudnn wheel through KLAB_CUDNN),
--      cuDNN's TFLOP/s as klab times it (CUPTI kernel time, and an event pair
--      around each call like PyTorch's), the route and engine used;
--   2. the same cases in PyTorch (tests/bench/sdpa_torch.py, same run):
--      the cuDNN backend and the flash backend, and klab's cuDNN over each
--      as a ratio (events against events; the issue asks >= 0.97 of PyTorch's
--      cuDNN backend with the same library);
--   3. the samples (mma_fwd on every forward task, the naive ones on the
--      short shape) evaluated by klab.eval: TFLOP/s and speedup over cuDNN.
--
--   build/klab tests/bench/attention_bench.lua [--skip=torch,samples,wheel] [--budget=1]
--                                              [--tasks=PATTERN]
--
-- Each library runs in a child klab (the library is chosen when a process
-- loads it): KLAB_CUDNN=<wheel>/lib/libcudnn.so.9 and LD_LIBRARY_PATH with
-- that directory first, so that cuDNN's sub-libraries come from the same
-- release. A child prints one JSON line per task (`--child`).

local cjson = require "cjson"

local skip, budget, pattern, child = {}, 1.0, nil, false
for _, a in ipairs(arg or {}) do
  local list = a:match("^%-%-skip=(.*)$")
  if list then for w in list:gmatch("[^,]+") do skip[w] = true end end
  budget = tonumber(a:match("^%-%-budget=(.*)$") or "") or budget
  pattern = a:match("^%-%-tasks=(.*)$") or pattern
  if a == "--child" then child = true end
end

local function line(...) io.write(string.format(...), "\n") end

local function attention_tasks()
  local task = require "klab.task"
  local all = task.list("tasks")
  local out = {}
  for _, t in ipairs(all) do
    if t.family == "attention" and (not pattern or t.name:find(pattern)) then out[#out + 1] = t end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- ---- child: time cuDNN on every task in this process -----------------------

if child then
  local eval = require "klab.eval"
  for _, t in ipairs(attention_tasks()) do
    -- The pipeline's baseline check, in this process: cuDNN against the
    -- reference once, then timed by each method.
    local r = eval.run_local(t, nil, { stages = { "baseline" }, budget_s = budget, methods = { "auto", "events" } })
    local st = r.stages.baseline or {}
    local timings = {}
    for m, x in pairs(st.timings or {}) do
      timings[m] = x.error and { error = x.error } or { median_us = x.median, tflops = x.tflops, method = x.method,
        samples = x.n, p10_us = x.p10, p90_us = x.p90 }
    end
    local d = t.dims
    local rec = { task = t.name, kind = t.name:find("^attn_bwd") and "bwd" or "fwd", causal = d.causal == 1,
      B = d.B, H = d.H, S = d.S, D = d.D, flops = t.flops, ok = r.verdict == "passed",
      refused = r.verdict == "unknown" and r.reason or nil, error = r.verdict == "incorrect" and r.reason or nil,
      info = st.info, timings = timings }
    io.write(cjson.encode(rec), "\n")
    io.flush()
    collectgarbage()
  end
  os.exit(0)
end

-- ---- parent ---------------------------------------------------------------

local shq = require("klab.command").shell_quote

local function run_lines(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local recs, other = {}, {}
  for ln in p:lines() do
    local ok, j = pcall(cjson.decode, ln)
    if ok and type(j) == "table" then recs[#recs + 1] = j else other[#other + 1] = ln end
  end
  p:close()
  return recs, other
end

-- The libraries: klab's search order, then PyTorch's wheel.
local libs = { { label = "klab default", env = "" } }
if not skip.wheel then
  local p = io.popen("python3 tests/bench/sdpa_torch.py --cudnn-dir 2>/dev/null")
  local dir = p and p:read("l")
  if p then p:close() end
  if dir and dir ~= "" then
    libs[#libs + 1] = { label = "torch wheel", dir = dir,
      env = "KLAB_CUDNN=" .. shq(dir .. "/libcudnn.so.9") .. " LD_LIBRARY_PATH=" ..
        shq(dir .. ":" .. (os.getenv("LD_LIBRARY_PATH") or "")) }
  else
    line("(no nvidia.cudnn wheel found by python3: only klab's default cuDNN is timed)")
  end
end

local self = "build/klab"
local results = {}   -- [lib index][task] = record
for i, lib in ipairs(libs) do
  local cmd = string.format("env %s %s tests/bench/attention_bench.lua --child --budget=%g%s", lib.env, self, budget,
    pattern and (" --tasks=" .. shq(pattern)) or "")
  local recs, other = run_lines(cmd)
  results[i] = {}
  for _, r in ipairs(recs) do results[i][r.task] = r end
  if #recs == 0 then line("child for %s printed no result:\n%s", lib.label, table.concat(other, "\n"):sub(-2000)) end
end

local tasks = attention_tasks()

local function tf(x) return x and string.format("%7.1f", x) or "      -" end

line("\n1. cuDNN through klab (TFLOP/s: CUPTI kernel time / event pair per call), L2 flushed, budget %g s", budget)
for i, lib in ipairs(libs) do
  local any = next(results[i])
  local first = any and results[i][any]
  local info = first and first.info or {}
  line("\n   library %d: %s: cuDNN %s, %s", i, lib.label, tostring(info.version), tostring(info.path))
  line("   %-32s %-9s %-7s %7s %7s  %s", "task", "route", "engine", "cupti", "events", "note")
  for _, t in ipairs(tasks) do
    local r = results[i][t.name]
    if r then
      local tm = r.timings or {}
      local note = r.refused or r.error or (r.info and r.info.refused and ("fell back: " .. r.info.refused)) or ""
      line("   %-32s %-9s %-7s %s %s  %s", t.name, tostring(r.info and r.info.route or "-"),
        tostring(r.info and r.info.engine or "-"), tf(tm.auto and tm.auto.tflops), tf(tm.events and tm.events.tflops),
        note:sub(1, 160))
    end
  end
end

-- 2. PyTorch in the same run.
if not skip.torch then
  local cases = {}
  for _, t in ipairs(tasks) do
    local d = t.dims
    cases[#cases + 1] = string.format("%s:%d:%dx%dx%dx%d", t.name:find("^attn_bwd") and "bwd" or "fwd",
      d.causal or 0, d.B, d.H, d.S, d.D)
  end
  local recs, other = run_lines("python3 tests/bench/sdpa_torch.py --samples 50 --cases " .. table.concat(cases, ","))
  local torch = {}
  for _, r in ipairs(recs) do
    local key = string.format("%s:%s:%dx%dx%dx%d", r.kind, r.causal and 1 or 0, r.B, r.H, r.S, r.D)
    torch[key .. ":" .. tostring(r.backend)] = r
  end
  local any = recs[1] or {}
  line("\n2. PyTorch %s (cuDNN %s at %s) against cuDNN through klab (library %d), TFLOP/s from event pairs",
    tostring(any.torch), tostring(any.cudnn), tostring(any.cudnn_path), #libs)
  line("   %-32s %8s %8s %7s %8s %7s  %s", "task", "klab", "t.cudnn", "ratio", "t.flash", "ratio", "note")
  local worst = math.huge
  for _, t in ipairs(tasks) do
    local d = t.dims
    local key = string.format("%s:%d:%dx%dx%dx%d", t.name:find("^attn_bwd") and "bwd" or "fwd", d.causal or 0,
      d.B, d.H, d.S, d.D)
    local tc, tfl = torch[key .. ":cudnn"], torch[key .. ":flash"]
    local r = results[#libs][t.name]
    local k = r and r.timings and r.timings.events and r.timings.events.tflops
    local rc = (k and tc and tc.tflops) and k / tc.tflops or nil
    local rf = (k and tfl and tfl.tflops) and k / tfl.tflops or nil
    if rc and rc < worst then worst = rc end
    local note = (tc and tc.error) or (tfl and tfl.error and ("flash: " .. tfl.error)) or ""
    line("   %-32s %s %s %7s %s %7s  %s", t.name, tf(k), tf(tc and tc.tflops), rc and string.format("%.3f", rc) or "-",
      tf(tfl and tfl.tflops), rf and string.format("%.3f", rf) or "-", note:sub(1, 120))
  end
  if worst < math.huge then
    line("   lowest klab/torch-cuDNN ratio: %.3f (%s 0.97)", worst, worst >= 0.97 and ">=" or "BELOW")
  end
  if #recs == 0 then line("   sdpa_torch.py printed no result:\n%s", table.concat(other, "\n"):sub(-2000)) end
end

-- 3. The samples against cuDNN.
if not skip.samples then
  local eval = require "klab.eval"
  local lib = libs[#libs]
  local env = nil
  if lib.dir then env = { KLAB_CUDNN = lib.dir .. "/libcudnn.so.9",
    LD_LIBRARY_PATH = lib.dir .. ":" .. (os.getenv("LD_LIBRARY_PATH") or "") } end
  local s <close> = eval.session { deadline = 300, env = env }
  line("\n3. Samples against cuDNN (%s), evaluated by klab.eval, timing budget %g s", lib.label, budget)
  line("   %-12s %-32s %-10s %10s %8s %9s  %s", "sample", "task", "verdict", "median us", "TFLOP/s", "speedup",
    "cuDNN")
  local list = {}
  for _, t in ipairs(tasks) do
    if t.name:find("^attn_fwd") then list[#list + 1] = { "tasks/attention/samples/mma_fwd", t.name } end
    if t.variant == "4x48x1024x128" then
      list[#list + 1] = { t.name:find("^attn_fwd") and "tasks/attention/samples/naive_fwd" or
        "tasks/attention/samples/naive_bwd", t.name }
    end
  end
  for _, c in ipairs(list) do
    local r = s:evaluate(c[2], c[1], { force = true, timing_opts = { budget_s = budget }, deadline = 300 })
    local tm = r and r.stages.timing or {}
    local bi = tm.baseline_info or {}
    line("   %-12s %-32s %-10s %10s %8s %9s  %s %s", c[1]:match("[^/]+$"), c[2], tostring(r and r.verdict),
      tm.candidate and string.format("%.1f", tm.candidate.median) or "-",
      tm.candidate and string.format("%.1f", tm.candidate.tflops or 0) or "-",
      tm.speedup and string.format("%.3fx", tm.speedup) or "-", tostring(bi.version or tm.baseline_error or ""),
      tostring(bi.route or ""))
    if r and r.verdict ~= "passed" then line("      reason: %s", tostring(r.reason)) end
  end
end
