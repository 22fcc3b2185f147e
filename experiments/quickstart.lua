-- experiments/quickstart.lua: what `make run` runs.
--
-- Compiles every sample kernel under tasks/ for Hopper (sm_90a) and Blackwell
-- (sm_100a), without a GPU, and prints the resources and the PTX instruction
-- census of each. Kernels that need the other architecture's instructions
-- fail to build for it, and the table says so with the assembler's reason.
--
--   klab experiments/quickstart.lua [ARCH...]

local jit = require("klab.jit")

local archs = { ... }
if #archs == 0 then archs = { "sm_90a", "sm_100a" } end

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
local gpu_ok, why = require("klab.gpu").available()
print(string.format("\n%d builds, %d refused by the compiler (expected for kernels written for the other architecture).",
  #rows, failures))
if not gpu_ok then print("GPU stages skipped: " .. tostring(why)) end
