-- tests/bench/report_bench.lua: klab report (and klab export) on the store
-- of a whole study, made through klab's own sweep pipeline with a stand-in
-- model server and evaluation session: 250 task groups x 10 models x 5
-- replicas x 5 turns (62,500 turns), with a study's verdict mix. Prints
-- the time and memory of building the report (twice, checking the bytes
-- are the same) and of the SFT export.
--
--   build/klab tests/bench/report_bench.lua [--tasks=250] [--models=10] [--replicas=5] [--turns=5] [--keep=DIR]
--
-- Targets: at 62.5k turns, klab report within 10 s and 300 MB; the export
-- within 100 MB. Memory is the process's peak resident set (VmHWM), read
-- before and after; each part runs in a child klab of its own, so that
-- one part's peak is not another's.

local experiment = require "klab.experiment"
local store = require "klab.store"
local sys = require "klab.sys"

local o = { tasks = 250, models = 10, replicas = 5, turns = 5 }
local keep
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^%-%-(%w+)=(.*)$")
  if k == "keep" then keep = v elseif k and o[k] then o[k] = math.tointeger(tonumber(v)) or o[k] end
end

local REPLY = "```cuda\n// bench\nextern \"C\" __global__ void gemm() {}\n```\n" .. ("x"):rep(2000)

-- The stand-in model server (every request answered at once).
local function http_standin() return dofile("tests/bench/standin_http.lua")(REPLY) end

-- A study's verdict mix, by submission: 30% compile errors, 25% incorrect,
-- 25% correct and slow (0.05x to 0.6x), 20% correct and fast (0.8x to 2x).
local function session_standin()
  local results, n = {}, 0
  local rng = require("klab.report.metrics").rng(20261202)
  return {
    submit = function()
      n = n + 1
      local u = rng:float()
      local r
      if u < 0.30 then r = { verdict = "compile_error", reason = "error: expected ';'", stages = {} }
      elseif u < 0.55 then r = { verdict = "incorrect", reason = "mismatch", stages = {} }
      else
        local s = u < 0.80 and (0.05 + rng:float() * 0.55) or (0.8 + rng:float() * 1.2)
        r = { verdict = "passed", reason = "correct", stages = {
          timing = { candidate = { median = 100 / s }, baseline = { median = 100 }, speedup = s } } }
      end
      results[n] = r
      return n
    end,
    wait = function(_, t) local r = results[t] results[t] = nil return r end,
    close = function() end,
  }
end

local function peak_mb()
  local f = io.open("/proc/self/status")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  local kb = s:match("VmHWM:%s*(%d+)")
  return kb and tonumber(kb) / 1024
end

local dir = keep or (function()
  local p = os.tmpname()
  os.remove(p)
  return p
end)()
assert(sys.mkdir(dir))
local path = dir .. "/study.db"

local mode = os.getenv("KLAB_REPORT_BENCH_PART")
if mode == "report" or mode == "export" then
  -- A child: one part, its time and peak memory on one line.
  local c0, t0 = os.clock(), sys.now()
  if mode == "report" then
    assert(require("klab.report").write(path, os.getenv("KLAB_REPORT_BENCH_OUT")))
  else
    local code = require("klab.cli.export").main { "sft", path, "--out", os.getenv("KLAB_REPORT_BENCH_OUT") }
    assert(code == 0, "export failed")
  end
  io.write(("%s %.2f %.2f %.1f\n"):format(mode, os.clock() - c0, sys.now() - t0, peak_mb() or -1))
  return 0
end

-- The store, through the sweep pipeline.
local f = io.open(path)
if f then f:close() else
  local db <close> = assert(store.open(path))
  local models, tasks = {}, {}
  for i = 1, o.models do
    models[i] = { name = ("model-%02d"):format(i), provider = "openai", model = ("m%02d"):format(i),
      base_url = "http://127.0.0.1:9/v1", concurrency = 256, prices = { input = 1.25, output = 10 } }
  end
  for i = 1, o.tasks do tasks[i] = { name = ("task_%03d"):format(i), workloads = { "gemm_bf16/123x457x789" } } end
  local c0 = os.clock()
  local e <close> = experiment.new { name = "study", db = db, models = models, tasks = tasks, tags = { "none" },
    replicas = o.replicas, turns = o.turns, progress = false, session = session_standin(), http = http_standin(),
    feedback = { template = false }, phase = "full", concurrency = 1024 }
  e:run()
  io.write(("store: %d turns in %d trajectories, built in %.1f s of CPU (%s)\n"):format(
    db:first("SELECT count(*) AS n FROM turns").n, db:first("SELECT count(*) AS n FROM trajectories").n,
    os.clock() - c0, path))
end

local function part(name, out)
  local q = require("klab.command").shell_quote
  local cmd = ("KLAB_REPORT_BENCH_PART=%s KLAB_REPORT_BENCH_OUT=%s %s %s --keep=%s"):format(name, q(out),
    q(arg[-1] or "build/klab"), q(arg[0]), q(dir))
  local p = assert(io.popen(cmd))
  local line = p:read("a")
  p:close()
  local _, cpu, wall, mb = line:match("(%a+) ([%d.]+) ([%d.]+) ([%d.-]+)%s*$")
  if not cpu then error(name .. " failed: " .. line) end
  return tonumber(cpu), tonumber(wall), tonumber(mb)
end

io.write(("%-10s %10s %10s %10s\n"):format("part", "CPU s", "wall s", "peak MB"))
for i = 1, 2 do
  local cpu, wall, mb = part("report", dir .. "/report" .. i)
  io.write(("%-10s %10.2f %10.2f %10.1f\n"):format("report " .. i, cpu, wall, mb))
end
local same = os.execute(("diff -r %s %s >/dev/null"):format(require("klab.command").shell_quote(dir .. "/report1"),
  require("klab.command").shell_quote(dir .. "/report2")))
io.write(("the two reports are %s\n"):format(same and "byte-identical" or "DIFFERENT"))
local cpu, wall, mb = part("export", dir .. "/sft.jsonl")
io.write(("%-10s %10.2f %10.2f %10.1f\n"):format("export", cpu, wall, mb))
io.write("targets at 62.5k turns: report <= 10 s and <= 300 MB, export <= 100 MB\n")
