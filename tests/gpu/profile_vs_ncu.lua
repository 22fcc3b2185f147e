-- tests/gpu/profile_vs_ncu.lua: klab's profile figures against Nsight
-- Compute on the same kernels. Run on a machine with a GPU, ncu and
-- profiling rights (the H200):
--
--   build/klab tests/gpu/profile_vs_ncu.lua [--task gemm_bf16/4096x4096x4096]
--       [--samples naive,mma_sync,wgmma_tma] [--tol 0.05] [--ncu PATH]
--   build/klab tests/gpu/profile_vs_ncu.lua --selftest   (the CSV parser; no GPU)
--
-- For each GEMM sample (tasks/gemm/samples/<name>):
--   1. klab's side, in a child klab process: tests/gpu/run_candidate.lua
--      (compile, plan, constant inputs, CUPTI-activity timing, then the
--      range-profiler stage) prints its metrics, profile and timing as JSON;
--   2. ncu's side: `ncu --clock-control none --metrics <the same names plus
--      launch__registers_per_thread, launch__waves_per_multiprocessor>
--      --csv --print-units base -k gemm klab replay TASK CANDIDATE --runs 1`
--      (klab replay runs the candidate with no CUPTI of klab's own);
--   3. every figure both report is compared: it agrees when the relative
--      difference is at most --tol (5%), or, for figures in percent, when
--      they differ by at most 1 percentage point (a relative test means
--      little near 0%). Counts of instructions and FLOPs are exact
--      hardware counts and should agree exactly. Percentages "of elapsed"
--      are compared as the profile reports them, over the kernels' span;
--      the range's own duration and elapsed cycles are listed, not compared
--      (the duration compared is the CUPTI activity median).
-- The processes never overlap: a process that uses CUPTI cannot be
-- profiled by ncu, and ncu wants the counters to itself.
-- Prints one table and a closing line "N figures: N passed, N failed, N
-- skipped"; exits 1 when a figure disagrees or a side failed.

local cjson = require "cjson"
local sys = require "klab.sys"

local opts = { task = "gemm_bf16/4096x4096x4096", samples = "naive,mma_sync,wgmma_tma", tol = 0.05 }
local SELFTEST = arg and arg[1] == "--selftest"
do
  local a = SELFTEST and {} or arg or {}
  local i = 1
  while i <= #a do
    local k = a[i]:match("^%-%-(.+)$")
    if k and a[i + 1] then
      opts[k] = a[i + 1]
      i = i + 2
    else
      io.stderr:write("usage: klab tests/gpu/profile_vs_ncu.lua [--task T] [--samples a,b] [--tol 0.05] [--ncu PATH]\n")
      os.exit(2)
    end
  end
  opts.tol = tonumber(opts.tol) or 0.05
end

local ROOT = (function()
  local p = io.popen("pwd")
  local d = p:read("l")
  p:close()
  return d
end)()
local KLAB = assert(sys.exe())

local sh = require("klab.command").shell_quote

local function find_ncu()
  if opts.ncu then return opts.ncu end
  return require("klab.eval.sanitizer").find_tool("ncu", "KLAB_NCU")
end

-- ---- klab's side, in a child process ---------------------------------------

local CHILD = [[
local cjson = require "cjson"
local profile = require "klab.eval.profile"
local task, cand = ...
local st, extra = dofile("tests/gpu/run_candidate.lua")(task, cand, { time = true })
local function clean(v)
  if type(v) == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return nil end
    return v
  end
  if type(v) ~= "table" then return v end
  local o = {}
  for k, x in pairs(v) do o[k] = clean(x) end
  return o
end
local out
if not st then
  out = { ok = false, error = tostring(extra) }
else
  out = { ok = st.status == "ok", status = st.status, reason = st.reason, metrics = clean(st.metrics),
    profile = clean({ registers = st.profile.registers, waves = st.profile.waves,
      duration_us = st.profile.duration_us, sm_pct = st.profile.sm_pct, mem_pct = st.profile.mem_pct,
      dram_pct = st.profile.dram_pct, busy = st.profile.busy, sm_clock_mhz = st.profile.sm_clock_mhz, occupancy_pct = st.profile.occupancy_pct,
      tensor_pct = st.profile.tensor_pct, dram_bytes = st.profile.dram_bytes }),
    text = st.text, timing = clean(extra and extra.timing), families = clean(st.families),
    flops = clean(st.flops), verdict = st.verdict }
end
io.write("KLAB_JSON ", cjson.encode(out), "\n")
]]

local function klab_side(task, cand)
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(CHILD)
  f:close()
  local p = io.popen(string.format("%s %s %s %s 2>/dev/null", sh(KLAB), sh(script), sh(task), sh(cand)))
  local out = p:read("a")
  p:close()
  os.remove(script)
  local js = out:match("KLAB_JSON ([^\n]+)")
  if not js then return nil, "klab side printed no result: " .. out:sub(-500) end
  local ok, v = pcall(cjson.decode, js)
  if not ok then return nil, "bad JSON from the klab side: " .. tostring(v) end
  if not v.ok then return nil, "klab side: " .. tostring(v.error or v.reason or v.status) end
  return v
end

-- ---- ncu's CSV ----------------------------------------------------------------

-- One CSV record (quoted fields, "" as an escaped quote).
local function csv_fields(line)
  local out, i, n = {}, 1, #line
  while i <= n + 1 do
    if line:sub(i, i) == '"' then
      local buf, j = {}, i + 1
      while j <= n do
        local c = line:sub(j, j)
        if c == '"' then
          if line:sub(j + 1, j + 1) == '"' then
            buf[#buf + 1] = '"'
            j = j + 2
          else
            break
          end
        else
          buf[#buf + 1] = c
          j = j + 1
        end
      end
      out[#out + 1] = table.concat(buf)
      i = j + 2 -- past the closing quote and the comma
    else
      local j = line:find(",", i, true) or (n + 1)
      out[#out + 1] = line:sub(i, j - 1)
      i = j + 1
    end
  end
  return out
end

-- "1,234,567.5" -> 1234567.5; "n/a" and "" -> nil.
local function number_of(s)
  if not s then return nil end
  s = s:gsub("^%s+", ""):gsub("%s+$", "")
  if s == "" or s:lower() == "n/a" then return nil end
  return tonumber((s:gsub(",", "")))
end

-- Parses ncu --csv output: the long form (one row per metric, columns
-- "Metric Name", "Metric Unit", "Metric Value") or the wide form of
-- --page raw (metric names as column headers, then a units row). Lines that
-- are not CSV records (==PROF== messages, the program's own output) are
-- skipped. Returns {kernels = {{id=, name=, values={metric=number}, units={}}}}.
local function parse_ncu_csv(text)
  local header, kernels, by_id = nil, {}, {}
  local wide_units
  for line in text:gmatch("[^\r\n]+") do
    if line:sub(1, 1) == '"' then
      local f = csv_fields(line)
      if not header then
        if f[1] == "ID" then
          header = {}
          for i, name in ipairs(f) do header[name] = i end
        end
      elseif header["Metric Name"] then
        local id = f[header["ID"]]
        local k = by_id[id]
        if not k then
          k = { id = id, name = f[header["Kernel Name"] or 0], values = {}, units = {} }
          by_id[id] = k
          kernels[#kernels + 1] = k
        end
        local m = f[header["Metric Name"]]
        k.values[m] = number_of(f[header["Metric Value"]])
        k.units[m] = header["Metric Unit"] and f[header["Metric Unit"]] or nil
      else
        -- Wide form: the first record after the header is the units row
        -- (its ID column is empty).
        if not wide_units and (f[header["ID"]] or "") == "" then
          wide_units = f
        else
          local k = { id = f[header["ID"]], name = f[header["Kernel Name"] or 0], values = {}, units = {} }
          for name, col in pairs(header) do
            if name:find("__") then
              k.values[name] = number_of(f[col])
              k.units[name] = wide_units and wide_units[col] or nil
            end
          end
          kernels[#kernels + 1] = k
        end
      end
    end
  end
  return { kernels = kernels }
end

local function ncu_side(ncu, task, cand, metrics)
  local cmd = string.format("%s --clock-control none --target-processes all -k gemm --metrics %s --csv "
    .. "--print-units base %s replay %s %s --runs 1 2>&1", sh(ncu), sh(table.concat(metrics, ",")), sh(KLAB),
    sh(task), sh(cand))
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  local r = parse_ncu_csv(out)
  if #r.kernels == 0 then return nil, "ncu reported no kernel; its output ends: " .. out:sub(-800) end
  if #r.kernels > 1 then
    io.stderr:write(string.format("[profile_vs_ncu] ncu reported %d kernels; comparing the first\n", #r.kernels))
  end
  return r.kernels[1]
end

-- ---- comparison ---------------------------------------------------------------

local function agree(a, b, percent)
  if a == nil or b == nil then return nil end
  local d = math.abs(a - b)
  if d == 0 then return true, 0 end
  local rel = d / math.max(math.abs(a), math.abs(b))
  if percent and d <= 1.0 then return true, rel end
  return rel <= opts.tol, rel
end

local rows, failures = {}, 0
local function row(sample, what, k, n, ok, rel, label)
  local status = label or (ok == nil and "n/a" or (ok and "ok" or "DIFF"))
  if ok == false then failures = failures + 1 end
  rows[#rows + 1] = { sample, what, k, n, rel, status }
end

local function fmt(v)
  if v == nil then return "-" end
  if math.abs(v) >= 1e6 then return string.format("%.6g", v) end
  if v == math.floor(v) then return string.format("%d", v) end
  return string.format("%.4g", v)
end

-- ---- --selftest: the parser on ncu-like output (no GPU, no ncu) ------------------

if SELFTEST then
  local long = table.concat({
    "==PROF== Connected to process 4242 (/opt/klab/build/klab)",
    "replay: 1 run",
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
      .. '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"',
    '"0","4242","klab","127.0.0.1","gemm","1","7","(384, 1, 1)","(512, 1, 1)","0","9.0",'
      .. '"Command line profiler metrics","dram__bytes_read.sum","byte","69,206,016"',
    '"0","4242","klab","127.0.0.1","gemm","1","7","(384, 1, 1)","(512, 1, 1)","0","9.0",'
      .. '"Command line profiler metrics","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","71.52"',
    '"0","4242","klab","127.0.0.1","gemm","1","7","(384, 1, 1)","(512, 1, 1)","0","9.0",'
      .. '"Command line profiler metrics","launch__registers_per_thread","register/thread","168"',
    '"0","4242","klab","127.0.0.1","gemm","1","7","(384, 1, 1)","(512, 1, 1)","0","9.0",'
      .. '"Command line profiler metrics","sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum","","n/a"',
    "==PROF== Disconnected from process 4242",
  }, "\n")
  local r = parse_ncu_csv(long)
  local fails = 0
  local function check(c, what)
    if not c then
      fails = fails + 1
      print("FAIL " .. what)
    end
  end
  check(#r.kernels == 1, "one kernel")
  local k = r.kernels[1] or { values = {}, units = {} }
  check(k.name == "gemm", "kernel name")
  check(k.values["dram__bytes_read.sum"] == 69206016, "thousands separators")
  check(k.values["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == 71.52, "decimal")
  check(k.units["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == "%", "unit")
  check(k.values.launch__registers_per_thread == 168, "registers")
  check(k.values["sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum"] == nil, "n/a is nil")
  local wide = table.concat({
    '"ID","Process ID","Kernel Name","dram__bytes_read.sum","gpu__time_duration.sum"',
    '"","","","byte","nsecond"',
    '"0","4242","gemm","1,024","2,500.5"',
    '"1","4242","gemm","2048","10"',
  }, "\n")
  r = parse_ncu_csv(wide)
  check(#r.kernels == 2, "wide: two kernels")
  check(r.kernels[1].values["dram__bytes_read.sum"] == 1024, "wide: value")
  check(r.kernels[1].values["gpu__time_duration.sum"] == 2500.5, "wide: decimal")
  check(r.kernels[1].units["gpu__time_duration.sum"] == "nsecond", "wide: unit")
  check(r.kernels[2].values["dram__bytes_read.sum"] == 2048, "wide: second kernel")
  local f = csv_fields('"a ""quoted"" b",plain,,"x,y"')
  check(f[1] == 'a "quoted" b' and f[2] == "plain" and f[3] == "" and f[4] == "x,y", "csv fields")
  check(agree(100, 104) == true and agree(100, 106) == false, "5% tolerance")
  check(agree(0.4, 1.2, true) == true and agree(10, 12, true) == false, "1 point for percentages")
  check(agree(nil, 3) == nil, "missing side")
  print(fails == 0 and "selftest: ok" or ("selftest: " .. fails .. " failed"))
  os.exit(fails == 0 and 0 or 1)
end

local ncu = find_ncu()
if not ncu then
  print("ncu not found (--ncu, KLAB_NCU, CUDA_HOME/bin, PATH): nothing compared")
  os.exit(1)
end

local EXTRA = { "launch__registers_per_thread", "launch__waves_per_multiprocessor" }

-- Figures of the profiled range as a whole: its duration, elapsed cycles
-- and average clock include launch latency and the closing
-- synchronisation, which no per-kernel figure of ncu's has. Percentages
-- "of elapsed" are compared as the profile reports them, over the kernels'
-- span (klab.eval.profile.over_kernels).
local PROFILE_FIGURE = {
  ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = "sm_pct",
  ["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = "mem_pct",
  ["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = "dram_pct",
}
local RANGE_SCOPED = { ["gpu__time_duration.sum"] = true, ["sm__cycles_elapsed.max"] = true,
  ["sm__cycles_elapsed.avg.per_second"] = true }

for sample in opts.samples:gmatch("[^,]+") do
  local cand = ROOT .. "/tasks/gemm/samples/" .. sample
  io.stderr:write("[profile_vs_ncu] ", sample, ": klab side\n")
  local k, kerr = klab_side(opts.task, cand)
  if not k then
    row(sample, "klab side", nil, nil, false)
    io.stderr:write("[profile_vs_ncu] ", sample, ": ", kerr, "\n")
  else
    io.stderr:write(k.text or "", "\n")
    local names = {}
    for name in pairs(k.metrics or {}) do names[#names + 1] = name end
    table.sort(names)
    local list = {}
    for _, n in ipairs(names) do list[#list + 1] = n end
    for _, n in ipairs(EXTRA) do list[#list + 1] = n end
    io.stderr:write("[profile_vs_ncu] ", sample, ": ncu side\n")
    local n, nerr = ncu_side(ncu, opts.task, cand, list)
    if not n then
      row(sample, "ncu side", nil, nil, false)
      io.stderr:write("[profile_vs_ncu] ", sample, ": ", nerr, "\n")
    else
      row(sample, "busy share of the range (klab: cycles active/elapsed)", k.profile.busy, nil, nil, nil, "info")
      for _, name in ipairs(names) do
        local a, b = k.metrics[name], n.values[name]
        if RANGE_SCOPED[name] then
          -- The range's own span: shown, not compared (ncu's is the kernel's).
          row(sample, name .. " (klab: range)", a, b, nil, nil, "info")
        elseif PROFILE_FIGURE[name] then
          -- Compared as the profile reports it: over the kernels' span.
          local v = k.profile[PROFILE_FIGURE[name]]
          local ok, rel = agree(v, b, true)
          row(sample, name .. " (klab: profile)", v, b, ok, rel)
        else
          local ok, rel = agree(a, b, name:find("pct") ~= nil)
          row(sample, name, a, b, ok, rel)
        end
      end
      -- Profile figures that come from elsewhere on klab's side.
      local ok, rel = agree(k.profile.registers, n.values.launch__registers_per_thread)
      row(sample, "registers/thread (klab: cuFuncGetAttribute)", k.profile.registers,
        n.values.launch__registers_per_thread, ok, rel)
      ok, rel = agree(k.profile.waves, n.values.launch__waves_per_multiprocessor)
      row(sample, "waves per SM (klab: occupancy API)", k.profile.waves, n.values.launch__waves_per_multiprocessor, ok,
        rel)
      local hz = k.profile.sm_clock_mhz and k.profile.sm_clock_mhz * 1e6
      ok, rel = agree(hz, n.values["sm__cycles_elapsed.avg.per_second"])
      row(sample, "SM clock in the kernel, Hz (klab: cycles active / duration)", hz,
        n.values["sm__cycles_elapsed.avg.per_second"], ok, rel)
      local dur_ns = k.timing and k.timing.median_us and k.timing.median_us * 1000
      ok, rel = agree(dur_ns, n.values["gpu__time_duration.sum"])
      row(sample, "duration ns (klab: CUPTI activity median)", dur_ns, n.values["gpu__time_duration.sum"], ok, rel)
    end
  end
end

-- ---- the table -------------------------------------------------------------------

local w = { 10, 74, 14, 14, 8, 5 }
local function line(c)
  local parts = {}
  for i, v in ipairs(c) do parts[i] = string.format("%-" .. w[i] .. "s", tostring(v)) end
  print(table.concat(parts, " "))
end
line { "sample", "figure", "klab", "ncu", "diff", "" }
for _, r in ipairs(rows) do
  line { r[1], r[2], fmt(r[3]), fmt(r[4]), r[5] and string.format("%.2f%%", 100 * r[5]) or "-", r[6] }
end
local agreed = 0
for _, r in ipairs(rows) do if r[6] == "ok" then agreed = agreed + 1 end end
-- The closing line in the unit suites' form, so gpu-check can read it.
print(string.format("%d figures: %d passed, %d failed, %d skipped (listed, not compared); tolerance %.0f%%, "
  .. "or 1 point for percentages", #rows, agreed, failures, #rows - agreed - failures, 100 * opts.tol))
os.exit(failures == 0 and 0 or 1)
