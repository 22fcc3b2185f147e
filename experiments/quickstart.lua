-- experiments/quickstart.lua: what `make run` runs.
--
--   klab experiments/quickstart.lua [arch=sm_90a,sm_100a] [files=A.ptx,B.cu] [sweep=false] [out=DIR]
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
local experiment = require("klab.experiment")

local o = experiment.options({
  about = "The quickstart: compiles the sample kernels, replays a small sweep from shipped replies, writes its report.",
  { "arch", { "sm_90a", "sm_100a" }, "the targets the sample kernels are compiled for" },
  { "files", { "" }, "the kernel files to compile (default: every .ptx and .cu under tasks/)" },
  { "sweep", true, "after the compile table, replay the sweep and write its report" },
  { "out", "", "the folder for the sweep's store and report (default: build/quickstart, else a temporary one)" },
}, { ... })
local archs = o.arch

-- ---- 1. compile census ---------------------------------------------------------

local function sample_files()
  local files = {}
  local p = assert(io.popen("find tasks -type f \\( -name '*.ptx' -o -name '*.cu' \\) | sort"))
  for f in p:lines() do
    -- A task's own reference and baseline kernels are compiled by klab
    -- after its prelude, not as candidates.
    if not f:match("/reference%.cu$") and not f:match("/baseline%.cu$") then files[#files + 1] = f end
  end
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

-- Compiles every file for every target, with a progress line on stderr
-- (an empty compile cache takes a while), then prints the table with its
-- columns as wide as their longest cell.
local function census()
  local files = o.files
  if #files == 0 or (#files == 1 and files[1] == "") then files = sample_files() end
  local rows, failures = {}, 0
  local bar = require("klab.progress").new { total = #files * #archs, label = "compile" }
  bar:update { done = 0, force = true }
  for _, file in ipairs(files) do
    for _, arch in ipairs(archs) do
      local res, err, code, detail = jit.compile_file(file, { arch = arch })
      if res then
        for _, k in ipairs(res.kernels) do
          rows[#rows + 1] = { file, arch, k.name, k.registers or -1, (k.spill_stores or 0) + (k.spill_loads or 0),
            k.shared_static or 0, k.local_bytes or 0, census_text(res.census) }
        end
      else
        failures = failures + 1
        local first = (detail and detail.log or err or ""):match("[^\n]*error[^\n]*") or err
        rows[#rows + 1] = { file, arch, code .. ": " .. first }
      end
      bar:update { done = bar.done + 1, note = file }
    end
  end
  bar:update { done = bar.done }
  bar:finish()
  local head = { "file", "arch", "kernel", "regs", "spill", "smem", "stack", "PTX census" }
  local w = {}
  for i, h in ipairs(head) do w[i] = #h end
  for _, r in ipairs(rows) do
    -- A refusal's message runs to the end of the line: it sets no width.
    if #r > 3 then for i, c in ipairs(r) do w[i] = math.max(w[i], #tostring(c)) end
    else w[1], w[2] = math.max(w[1], #r[1]), math.max(w[2], #r[2]) end
  end
  local fmt = ("%%-%ds  %%-%ds  %%-%ds  %%%ds  %%%ds  %%%ds  %%%ds  %%s"):format(w[1], w[2], w[3], w[4], w[5], w[6], w[7])
  print(fmt:format(table.unpack(head)))
  for _, r in ipairs(rows) do
    if #r > 3 then print(fmt:format(table.unpack(r)))
    else print(("%%-%ds  %%-%ds  %%s"):format(w[1], w[2]):format(r[1], r[2], r[3])) end
  end
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
  if o.out ~= "" then
    dir = o.out
  elseif is_dir("build") then
    dir = "build/quickstart"
  else
    dir = os.tmpname()
    os.remove(dir)
  end
  assert(require("klab.sys").mkdir(dir))
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
if not o.sweep then return 0 end
print("\n== 2. A multi-turn sweep replayed from sample responses (written by the klab team, not model output)\n")
local store_path, out_dir = sweep()
local gpu_ok, why = require("klab.gpu").available()
if not gpu_ok then print("\nGPU stages skipped: " .. tostring(why)) end

print("\n== 3. The report of this store (figures, tables, provenance)\n")
local report_dir = out_dir .. "/report"
local files, warnings = assert(require("klab.report").write(store_path, report_dir))
for _, w in ipairs(warnings or {}) do print("note: " .. w) end
print(string.format("Report: %s/index.html (%d files)", report_dir, #files))
