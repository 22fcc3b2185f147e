-- experiments/quickstart.lua: what `make run` runs.
--
--   klab experiments/quickstart.lua [ARCH...]
--
-- 1. Compiles every sample kernel under tasks/ for Hopper (sm_90a) and
--    Blackwell (sm_100a), without a GPU, and prints the resources and the PTX
--    instruction census of each. Kernels that need the other architecture's
--    instructions fail to build for it, and the table says so with the
--    assembler's reason.
-- 2. Replays (the sweep of experiments/quickstart_spec.lua) the sample
--    responses in experiments/responses/quickstart/
--    (written by the klab team as sample data, not model output) through the
--    whole pipeline, in replay mode (no network): a multi-turn sweep of one
--    "model" over the small bf16 GEMM shapes, 2 prompt tags x 2 replicas x 3
--    turns, with extraction, compilation, the launch plan, the GPU stages
--    when there is a GPU, PTXBench-style feedback, the store and a summary
--    table. Without a GPU the GPU stages are skipped (verdict "unknown") and
--    the run says so. The store is made afresh in build/quickstart/ (or a
--    temporary folder), so two runs print the same table.

local jit = require("klab.jit")

local archs = { ... }
if #archs == 0 then archs = { "sm_90a", "sm_100a" } end

-- ---- 1. compile census ---------------------------------------------------------

local function sample_files()
  local files = {}
  local p = assert(io.popen("find tasks -type f \\( -name '*.ptx' -o -name '*.cu' \\) | sort"))
  for f in p:lines() do files[#files + 1] = f end
  p:close()
  return files
end

-- The census families worth a column; the rest are summed into "other".
local FAMILIES = { "wgmma", "cp.async.bulk.tensor", "mbarrier", "mma.sync", "ldmatrix", "tcgen05" }

local function census_text(census)
  local parts = {}
  for _, fam in ipairs(FAMILIES) do
    local n = 0
    for k, v in pairs(census or {}) do
      if k == fam or k:sub(1, #fam + 1) == fam .. "." then n = n + v end
    end
    if n > 0 then parts[#parts + 1] = fam .. "=" .. n end
  end
  return #parts > 0 and table.concat(parts, " ") or "-"
end

local function census()
  local rows, failures = {}, 0
  for _, file in ipairs(sample_files()) do
    for _, arch in ipairs(archs) do
      local res, err, code, detail = jit.compile_file(file, { arch = arch })
      if res then
        for _, k in ipairs(res.kernels) do
          rows[#rows + 1] = string.format("%-34s %-8s %-26s %5d %6d %6d %7d  %s", file, arch, k.name,
            k.registers, k.spill_stores + k.spill_loads, k.shared_static, k.local_bytes, census_text(res.census))
        end
      else
        failures = failures + 1
        local first = (detail and detail.log or err or ""):match("[^\n]*error[^\n]*") or err
        rows[#rows + 1] = string.format("%-34s %-8s %s: %s", file, arch, code, first)
      end
    end
  end
  print(string.format("%-34s %-8s %-26s %5s %6s %6s %7s  %s", "file", "arch", "kernel", "regs", "spill", "smem",
    "stack", "PTX census"))
  for _, r in ipairs(rows) do print(r) end
  print(string.format("\n%d builds, %d refused by the compiler (expected for kernels written for the other architecture).",
    #rows, failures))
end

-- ---- 2. a replayed multi-turn sweep ----------------------------------------------

local function is_dir(path)
  local f = io.open(path .. "/.", "r")
  if f then f:close() return true end
  return false
end

local function fresh_store()
  local dir
  if is_dir("build") then
    dir = "build/quickstart"
  else
    dir = os.tmpname()
    os.remove(dir)
  end
  os.execute("mkdir -p '" .. dir .. "'")
  local path = dir .. "/quickstart.db"
  for _, suffix in ipairs { "", "-wal", "-shm" } do os.remove(path .. suffix) end
  return path, dir
end

local function sweep()
  local experiment = require("klab.experiment")
  local path, dir = fresh_store()
  local exp <close> = experiment.new(dofile("experiments/quickstart_spec.lua") { db = path, log = dir .. "/quickstart.log" })
  local summary = exp:run()
  print(exp:table())
  local req = summary.requests
  print(string.format("\n%d trajectories, %d turns; responses: %d from the shipped files, %d from the store, %d from the network.",
    summary.trajectories, summary.turns, req.files, req.cache, req.network))
  print("Store: " .. path .. " (tables experiments, trajectories, turns, responses, evaluations; docs/experiments.md)")
  return path, dir
end

print("== 1. Sample kernels compiled for " .. table.concat(archs, " and ") .. " (no GPU needed)\n")
census()
print("\n== 2. A multi-turn sweep replayed from sample responses (written by the klab team, not model output)\n")
local store_path, out_dir = sweep()
local gpu_ok, why = require("klab.gpu").available()
if not gpu_ok then print("\nGPU stages skipped: " .. tostring(why)) end

print("\n== 3. The report of this store (figures, tables, provenance)\n")
local report_dir = out_dir .. "/report"
local files, warnings = assert(require("klab.report").write(store_path, report_dir))
for _, w in ipairs(warnings or {}) do print("warning: " .. w) end
print(string.format("Report: %s/index.html (%d files)", report_dir, #files))
