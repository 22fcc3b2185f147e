-- klab.eval.profile: which instructions a candidate executed, tensor FLOPs by
-- path, and a compact performance profile for feedback (docs/profile.md).
--
-- The analysis is pure Lua and works on plain tables (tested without a
-- GPU); the measurements come from klab.prof (CUPTI Range Profiler, SASS
-- listings, SASS metrics), whose entry points are re-exported here.
--
-- The instruction stage that measures them is klab.eval.profiler; the SASS
-- census klab.eval.sass.
--
--   profile.summarize(stage, {duration_us=, source=})  -> profile, text
--       Adds the duration from activity records (the timing stage) and
--       rebuilds the profile and its text. Never from a profiled run.
--   profile.aggregate(values, chip [, rows])   -> roles {["inst.wgmma"]=n, ...}
--   profile.families(roles, targets, chip)     -> {wgmma={status=, executed=, count=, reason=}, ...}
--   profile.flops(roles, task_flops, chip)     -> {hgmma=, hmma=, utc=, tensor=, other=, task=, frac={...}}
--   profile.verdict(stage, opts)               -> "target_not_executed", detail | nil (klab.eval.verdict words it)
--   profile.over_kernels(roles, role [, kernel_ns]) -> an "of elapsed" percentage over the kernels' span
--   profile.compact(roles, info)               -> profile table (figures and signals)
--   profile.text(p)                            -> short text a prompt can include
--   profile.THRESHOLDS, profile.FAMILIES
--   profile.rows_for(chip [, rows]), profile.table_chip(chip)   the metric table's rows of a chip
--   profile.available(), profile.new(ctx, opts), profile.sass_census(cubin),
--   profile.sass_parse(text), profile.metric_table(), ...   (klab.prof)

local ok_c, C = pcall(require, "klab.prof")
if not ok_c then C = nil end

local M = {}


-- ---- thresholds (stated in the text and in docs/profile.md) -------------

M.THRESHOLDS = {
  busy_pct = 60,           -- memory-/compute-bound: that throughput >= 60% of peak and above the other
  low_occupancy_pct = 25,  -- achieved occupancy below 25% of the SM's warp slots
  register_pressure = 128, -- more than 128 registers per thread
  spill_bytes = 0,         -- any local memory per thread (spills or local arrays)
  tensor_frac = 0.10,      -- tensor-core FLOPs below 10% of the task's FLOPs (tensor tasks only)
  min_path_fraction = 0.5, -- a target family with a FLOP path must carry >= 50% of the task's FLOPs
}

-- ---- instruction families -----------------------------------------------
--
-- count: roles whose value is the family's executed warp-instruction count
-- (the first one measured is used); flops: the role of the FLOP path that
-- proves the family did the work; sass: SASS opcodes of the family (for
-- static and executed histograms); chips: where the hardware can run it.

M.FAMILIES = {
  wgmma = { count = { "inst.wgmma" }, flops = "hgmma", chips = { GH100 = true },
            sass = { "HGMMA", "IGMMA", "QGMMA", "BGMMA" } },
  tma = { count = { "inst.tma" }, sass = { "UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF", "UBLKCP", "UBLKRED", "UBLKPF" } },
  ["tcgen05.mma"] = { count = { "inst.utcmma", "inst.tc" }, flops = "utc", chips = { GB100 = true },
                      sass = { "UTCHMMA", "UTCQMMA", "UTCOMMA", "UTCIMMA", "UTCMMA", "UTCBAR" } },
  ["tcgen05.tmem"] = { count = { "inst.tmem" }, chips = { GB100 = true },
                       sass = { "LDT", "LDTM", "STT", "STTM", "UTCCP", "UTCSHIFT" } },
  ["mma.sync"] = { count = { "inst.hmma" }, flops = "hmma", sass = { "HMMA", "IMMA", "DMMA", "BMMA" } },
}
M.FAMILIES.tcgen05 = M.FAMILIES["tcgen05.mma"]

local TENSOR_FAMILIES = { wgmma = true, ["tcgen05.mma"] = true, tcgen05 = true, ["mma.sync"] = true }

-- ---- helpers ---------------------------------------------------------------

local function finite(x) return type(x) == "number" and x == x and x ~= math.huge and x ~= -math.huge end

local function rows_for(chip, rows)
  rows = rows or (C and C.metric_table()) or {}
  local out = {}
  for _, r in ipairs(rows) do
    if r.chip == chip then out[#out + 1] = r end
  end
  return out
end

-- The chip whose rows apply (GB102/GB110 use GB100's).
local function table_chip(chip)
  if chip == "GB102" or chip == "GB110" then return "GB100" end
  return chip
end
M.rows_for, M.table_chip, M.TENSOR_FAMILIES = rows_for, table_chip, TENSOR_FAMILIES

-- ---- roles ------------------------------------------------------------------

-- values: {["metric.name"] = number}. Sums the metrics of each role
-- ("pct.*", "rate.*" and "cycles.*" roles take the largest); a role whose
-- metrics were all missing or NaN is absent. Derived: inst.hmma, the
-- mma.sync instructions, = inst.tensor_pipe - inst.wgmma -
-- inst.tensor_hfma2 + inst.imma + inst.dmma (GH100's HMMA sub-pipe count
-- also holds the HGMMA and the HFMA2.MMA that nvcc issues there for plain
-- half-precision arithmetic and moves: a SIMT kernel is not mma.sync);
-- busy = cycles.active / cycles.elapsed, the share of the range the kernels
-- themselves took (at most 1).
function M.aggregate(values, chip, rows)
  local roles = {}
  for _, r in ipairs(rows_for(table_chip(chip), rows)) do
    local v = values[r.name]
    if finite(v) and r.src then
      -- Tensor FLOPs by operand type too, whatever their path.
      roles["src." .. r.src] = (roles["src." .. r.src] or 0) + v
    end
    if finite(v) then
      local cur = roles[r.role]
      if r.role:find("^pct%.") or r.role:find("^rate%.") or r.role:find("^cycles%.") then
        roles[r.role] = (cur == nil or v > cur) and v or cur
      else
        roles[r.role] = (cur or 0) + v
      end
    end
  end
  if roles["inst.tensor_pipe"] and roles["inst.wgmma"] then
    roles["inst.hmma"] = math.max(0, roles["inst.tensor_pipe"] - roles["inst.wgmma"] - (roles["inst.tensor_hfma2"] or 0))
      + (roles["inst.imma"] or 0) + (roles["inst.dmma"] or 0)
  end
  local active, elapsed = roles["cycles.active"], roles["cycles.elapsed"]
  if active and elapsed and active > 0 and elapsed > 0 then roles.busy = math.min(1, active / elapsed) end
  return roles
end

-- The range around the planned launches also holds their launch latency
-- and the synchronisation that closes it (a 200 us GEMM sat in a 335 us
-- range on the H200), so a throughput "of elapsed" is diluted by idle
-- time that belongs to no kernel. Dividing by the kernels' share of the
-- range gives the figure over the kernels' own span, which is what Nsight
-- Compute reports per kernel. The share is counted in the clock of the
-- figure's own domain: SM cycles (roles.busy) for SM and memory-pipeline
-- throughput; for DRAM, whose clock does not follow the SM's (a busy
-- H200 slows its SMs to 1.64 GHz inside the kernel while the idle rest of
-- the range runs faster), time: kernel_ns, the span of the launches from
-- activity records, over the range's duration (time.ns); before timing has
-- given that span, the SM-cycle share stands in (it understates the time
-- share when the SMs slow down inside the kernels). Without any share the
-- range's figure is returned as is.
local ELAPSED_ROLES = { ["pct.sm"] = true, ["pct.mem"] = true, ["pct.dram"] = true }

function M.over_kernels(roles, role, kernel_ns)
  local v = roles[role]
  if v == nil or not ELAPSED_ROLES[role] then return v end
  local share = roles.busy
  local range_ns = roles["time.ns"]
  if role == "pct.dram" and finite(kernel_ns) and kernel_ns > 0 and finite(range_ns) and range_ns > 0 then
    share = math.min(1, kernel_ns / range_ns)
  end
  if not share then return v end
  return math.min(100, v / share)
end

-- ---- FLOPs by path ----------------------------------------------------------

-- Tensor FLOPs (the *_ops_path_* counters count a multiply-add as 2) by
-- path: hgmma (wgmma: HGMMA/IGMMA, and fp8 QGMMA), hmma (mma.sync:
-- HMMA/IMMA), utc (tcgen05.mma: UTC*MMA); other = the task's FLOPs not
-- done on tensor cores. GH100 does not split fp8 tensor FLOPs by path: they
-- go to hgmma when wgmma instructions ran, else to hmma.
-- FLOPs off the tensor cores, from the SIMT arithmetic counts: an FMA is
-- two FLOPs, an add or a multiply one; a half-precision instruction works on
-- a pair (HFMA2 is four FLOPs).
local SIMT_FLOPS = { ["ops.ffma"] = 2, ["ops.fadd"] = 1, ["ops.fmul"] = 1, ["ops.hfma"] = 4, ["ops.hadd"] = 2,
  ["ops.hmul"] = 2, ["ops.dfma"] = 2, ["ops.dadd"] = 1, ["ops.dmul"] = 1 }

local function simt_flops(roles)
  local n
  for role, w in pairs(SIMT_FLOPS) do
    if roles[role] then n = (n or 0) + w * roles[role] end
  end
  return n
end

function M.flops(roles, task_flops, chip)
  local f = { task = task_flops }
  f.simt = simt_flops(roles)
  local fp8 = roles["flops.fp8"] or 0
  local gmma_ran = (roles["inst.wgmma"] or 0) > 0
  if roles["flops.gmma"] or roles["flops.fp8"] then
    f.hgmma = (roles["flops.gmma"] or 0) + (gmma_ran and fp8 or 0)
  end
  if roles["flops.hmma"] or (roles["flops.fp8"] and not gmma_ran) then
    f.hmma = (roles["flops.hmma"] or 0) + (gmma_ran and 0 or fp8)
  end
  f.utc = roles["flops.utc"]
  for role, v in pairs(roles) do
    local src = role:match("^src%.(.+)$")
    if src then
      f.src = f.src or {}
      f.src[src] = v
    end
  end
  local have_tensor = f.hgmma ~= nil or f.hmma ~= nil or f.utc ~= nil
  if have_tensor then f.tensor = (f.hgmma or 0) + (f.hmma or 0) + (f.utc or 0) end
  -- The arithmetic that executed, on any pipe: what the work rule counts.
  if have_tensor and f.simt then f.executed = f.tensor + f.simt end
  if not have_tensor and not f.simt then return f end
  if finite(task_flops) and task_flops > 0 then
    if f.tensor then f.other = math.max(0, task_flops - f.tensor) end
    f.frac = {}
    for _, k in ipairs { "hgmma", "hmma", "utc", "tensor", "other", "simt", "executed" } do
      if f[k] then f.frac[k] = f[k] / task_flops end
    end
    if f.src then
      f.frac.src = {}
      for k, v in pairs(f.src) do f.frac.src[k] = v / task_flops end
    end
  end
  return f
end

-- ---- families ---------------------------------------------------------------

-- Each target family: executed (count > 0), not executed (count == 0), or
-- unknown (not measured here: the metric is missing, or klab has no
-- counter for the family on this chip).
function M.families(roles, targets, chip)
  local out = {}
  for _, name in ipairs(targets or {}) do
    local fam = M.FAMILIES[name]
    local r = { status = "unknown" }
    if not fam then
      r.reason = "klab has no counter for instruction family '" .. tostring(name) .. "'"
    elseif fam.chips and chip and not fam.chips[table_chip(chip)] then
      r.reason = name .. " does not exist on " .. tostring(chip)
    else
      local count, role
      for _, c in ipairs(fam.count) do
        if roles[c] ~= nil then count, role = roles[c], c break end
      end
      local path = fam.flops and roles[({ hgmma = "flops.gmma", hmma = "flops.hmma", utc = "flops.utc" })[fam.flops]]
      if count == nil then
        r.reason = "no measurement of " .. name .. " on " .. tostring(chip)
      else
        r.count = math.floor(count + 0.5)
        r.metric_role = role
        -- A tcgen05 pipe count also holds UTCBAR/UTCCP: the FLOP path decides.
        local ran = count > 0
        if role == "inst.tc" and path ~= nil then ran = path > 0 end
        r.executed = ran
        r.status = ran and "executed" or "not_executed"
      end
    end
    out[name] = r
  end
  return out
end

-- ---- the verdict rule -------------------------------------------------------

-- insufficient_work when the stage measured the arithmetic that executed
-- (tensor-core FLOPs by path plus the SIMT pipes' FLOPs) and it is below
-- `required` of the task's FLOPs: a kernel that skips work it should do
-- (a shortcut on a recognised input, results fetched from somewhere
-- instead of computed). Unmeasured figures never give a verdict.
function M.work_verdict(stage, required)
  if type(stage) ~= "table" or stage.status ~= "ok" or not required then return nil end
  local fl = stage.flops or {}
  if not (finite(fl.executed) and finite(fl.task) and fl.task > 0) then return nil end
  if fl.executed >= required * fl.task then return nil end
  return "insufficient_work", { kind = "work", executed = fl.executed, tensor = fl.tensor, simt = fl.simt,
    task = fl.task, required = required }
end

-- target_not_executed when the stage measured (status "ok") and a target
-- family did not run, or ran but its FLOP path carried less than
-- min_path_fraction of the task's FLOPs (a GEMM that issues one token wgmma
-- and does the rest through HMMA). Unknown families never give a verdict.
function M.verdict(stage, opts)
  opts = opts or {}
  if type(stage) ~= "table" or stage.status ~= "ok" then return nil end
  local minf = opts.min_path_fraction or M.THRESHOLDS.min_path_fraction
  local names = {}
  for n in pairs(stage.families or {}) do names[#names + 1] = n end
  table.sort(names)
  -- Every family that did not run, tensor families first.
  local missing = {}
  for _, n in ipairs(names) do
    if stage.families[n].status == "not_executed" and TENSOR_FAMILIES[n] then missing[#missing + 1] = n end
  end
  for _, n in ipairs(names) do
    if stage.families[n].status == "not_executed" and not TENSOR_FAMILIES[n] then missing[#missing + 1] = n end
  end
  local fl = stage.flops or {}
  if #missing > 0 then
    local hmma = fl.frac and fl.hmma and fl.hmma > 0 and TENSOR_FAMILIES[missing[1]] and missing[1] ~= "mma.sync"
      and fl.frac.hmma or nil
    return "target_not_executed", { kind = "missing", missing = missing, arch = stage.arch, hmma_frac = hmma }
  end
  if minf > 0 and fl.frac then
    for _, n in ipairs(names) do
      local f, fam = stage.families[n], M.FAMILIES[n]
      if f.status == "executed" and fam and fam.flops and fl[fam.flops] ~= nil and fl.frac[fam.flops] < minf then
        return "target_not_executed", { kind = "path", family = n, count = f.count or 0, frac = fl.frac[fam.flops],
          min = minf, hmma = fl.frac.hmma, other = fl.frac.other }
      end
    end
  end
  return nil
end

-- target_not_executed when the task names the operand type its tensor-core
-- path must use (tensor_type) and the stage measured tensor FLOPs by type,
-- but that type carried less than `required` of the task's FLOPs (the
-- task's work fraction, else min_path_fraction): an fp8 GEMM done by bf16
-- wgmma after a conversion. The reason says which types ran. Only where
-- the task targets a tensor-core family on this arch.
function M.type_verdict(stage, tensor_type, required)
  if type(stage) ~= "table" or stage.status ~= "ok" or not tensor_type then return nil end
  local tensor = false
  for _, n in ipairs(stage.targets or {}) do
    if TENSOR_FAMILIES[n] then tensor = true end
  end
  local fl = stage.flops or {}
  if not tensor or not fl.src or not (finite(fl.task) and fl.task > 0) then return nil end
  required = required or M.THRESHOLDS.min_path_fraction
  local got = fl.src[tensor_type] or 0
  if got >= required * fl.task then return nil end
  local ran = {}
  for k, v in pairs(fl.src) do
    if v > 0 then ran[#ran + 1] = { k, v / fl.task } end
  end
  table.sort(ran, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  return "target_not_executed", { kind = "type", type = tensor_type, frac = got / fl.task, task = fl.task,
    required = required, ran = ran }
end

-- ---- the compact profile ----------------------------------------------------

-- roles: from aggregate. info (all optional): duration_us, duration_source,
-- kernel = {registers=, static_smem=, local_bytes=, name=}, dynamic_smem,
-- threads (per block), blocks (grid size), blocks_per_sm, sm_count,
-- regs_per_sm, task_bytes, flops (from M.flops), tensor_task (bool).
function M.compact(roles, info)
  info = info or {}
  local T = M.THRESHOLDS
  local kernel_ns = finite(info.duration_us) and info.duration_us > 0 and info.duration_us * 1e3 or nil
  local p = {
    duration_us = info.duration_us, duration_source = info.duration_source,
    sm_pct = M.over_kernels(roles, "pct.sm"), mem_pct = M.over_kernels(roles, "pct.mem"),
    dram_pct = M.over_kernels(roles, "pct.dram", kernel_ns), busy = roles.busy,
    occupancy_pct = roles["pct.occupancy"], tensor_pct = roles["pct.tensor"],
  }
  -- The SM clock inside the kernels (their busiest SM's cycles over their
  -- span); the range's average also counts its idle, faster-clocked part.
  local active = roles["cycles.active"]
  if kernel_ns and finite(active) and active > 0 then
    p.sm_clock_mhz = active / kernel_ns * 1e3
  elseif roles["rate.sm_hz"] then
    p.sm_clock_mhz = roles["rate.sm_hz"] / 1e6
  end
  local k = info.kernel or {}
  p.kernel = k.name
  p.registers, p.static_smem, p.local_bytes = k.registers, k.static_smem, k.local_bytes
  p.dynamic_smem = info.dynamic_smem
  p.threads = info.threads
  if info.blocks and info.blocks_per_sm and info.blocks_per_sm > 0 and info.sm_count and info.sm_count > 0 then
    p.blocks_per_sm = info.blocks_per_sm
    p.waves = info.blocks / (info.blocks_per_sm * info.sm_count)
  end
  if roles["bytes.dram_read"] or roles["bytes.dram_write"] then
    p.dram_read = roles["bytes.dram_read"]
    p.dram_write = roles["bytes.dram_write"]
    p.dram_bytes = (p.dram_read or 0) + (p.dram_write or 0)
    if finite(info.task_bytes) and info.task_bytes > 0 then
      p.task_bytes = info.task_bytes
      p.dram_ratio = p.dram_bytes / info.task_bytes
    end
  end
  local fl = info.flops or {}
  p.flops = fl

  local sig = {}
  local mem = math.max(p.mem_pct or -1, p.dram_pct or -1)
  if mem < 0 then mem = nil end
  if mem and mem >= T.busy_pct and (p.sm_pct == nil or mem >= p.sm_pct) then
    sig[#sig + 1] = { name = "memory_bound", text = string.format(
      "memory-bound (memory throughput %.0f%% of peak >= %d%%%s)", mem, T.busy_pct,
      p.sm_pct and string.format(", above SM %.0f%%", p.sm_pct) or "") }
  end
  if p.sm_pct and p.sm_pct >= T.busy_pct and (mem == nil or p.sm_pct > mem) then
    sig[#sig + 1] = { name = "compute_bound", text = string.format(
      "compute-bound (SM throughput %.0f%% of peak >= %d%%%s)", p.sm_pct, T.busy_pct,
      mem and string.format(", above memory %.0f%%", mem) or "") }
  end
  if p.occupancy_pct and p.occupancy_pct < T.low_occupancy_pct then
    sig[#sig + 1] = { name = "low_occupancy", text = string.format(
      "low occupancy (achieved %.1f%% of the SM's warp slots < %d%%)", p.occupancy_pct, T.low_occupancy_pct) }
  end
  if p.registers and p.registers > T.register_pressure then
    local extra = ""
    if info.regs_per_sm and info.regs_per_sm > 0 then
      extra = string.format("; %d registers per SM hold at most %d such threads", info.regs_per_sm,
        info.regs_per_sm // p.registers)
    end
    sig[#sig + 1] = { name = "register_pressure", text = string.format(
      "register pressure (%d registers per thread > %d%s)", p.registers, T.register_pressure, extra) }
  end
  if p.local_bytes and p.local_bytes > T.spill_bytes then
    sig[#sig + 1] = { name = "spilling", text = string.format(
      "spilling or local memory (%d bytes of local memory per thread > %d)", p.local_bytes, T.spill_bytes) }
  end
  if info.tensor_task and fl.frac and fl.frac.tensor and fl.frac.tensor < T.tensor_frac then
    sig[#sig + 1] = { name = "no_tensor_cores", text = string.format(
      "not using the tensor cores (%.1f%% of the task's FLOPs on tensor cores < %.0f%%)", 100 * fl.frac.tensor,
      100 * T.tensor_frac) }
  end
  p.signals = sig
  p.signal_names = {}
  for i, s in ipairs(sig) do p.signal_names[i] = s.name end
  return p
end

local function pct(x) return x and string.format("%.1f%%", x) or "?" end

local function bytes_text(b)
  if not b then return "?" end
  if b >= 1e9 then return string.format("%.2f GB", b / 1e9) end
  if b >= 1e6 then return string.format("%.2f MB", b / 1e6) end
  if b >= 1e3 then return string.format("%.1f kB", b / 1e3) end
  return string.format("%d B", math.floor(b + 0.5))
end

-- A short text for a prompt: every figure the profile has, then the
-- signals with their thresholds.
function M.text(p)
  local parts = {}
  if p.duration_us then
    parts[#parts + 1] = string.format("%.1f us (%s)", p.duration_us, p.duration_source or "CUPTI activity")
  end
  if p.sm_pct or p.mem_pct then
    local s = string.format("SM throughput %s of peak, memory %s", pct(p.sm_pct), pct(p.mem_pct))
    if p.dram_pct then s = s .. string.format(" (DRAM %s)", pct(p.dram_pct)) end
    parts[#parts + 1] = s
  end
  if p.occupancy_pct then parts[#parts + 1] = "achieved occupancy " .. pct(p.occupancy_pct) end
  if p.tensor_pct then parts[#parts + 1] = "tensor pipe active " .. pct(p.tensor_pct) end
  if p.registers then
    local s = string.format("%d registers/thread", p.registers)
    if p.static_smem or p.dynamic_smem then
      s = s .. string.format(", %d B static + %d B dynamic shared memory", p.static_smem or 0, p.dynamic_smem or 0)
    end
    s = s .. ((p.local_bytes or 0) > 0 and string.format(", %d B local memory/thread", p.local_bytes)
      or ", no local memory")
    parts[#parts + 1] = s
  end
  if p.waves then
    parts[#parts + 1] = string.format("%.2f waves (%d block%s/SM)", p.waves, p.blocks_per_sm,
      p.blocks_per_sm == 1 and "" or "s")
  end
  if p.dram_bytes then
    local s = "DRAM " .. bytes_text(p.dram_bytes)
    if p.dram_ratio then s = s .. string.format(" = %.2fx the task's minimum %s", p.dram_ratio, bytes_text(p.task_bytes)) end
    parts[#parts + 1] = s
  end
  local fl = p.flops or {}
  if fl.frac then
    local bits = {}
    if fl.hgmma then bits[#bits + 1] = string.format("%.1f%% wgmma (HGMMA)", 100 * fl.frac.hgmma) end
    if fl.utc then bits[#bits + 1] = string.format("%.1f%% tcgen05 (UTC*MMA)", 100 * fl.frac.utc) end
    if fl.hmma then bits[#bits + 1] = string.format("%.1f%% mma.sync (HMMA)", 100 * fl.frac.hmma) end
    bits[#bits + 1] = string.format("%.1f%% other", 100 * fl.frac.other)
    parts[#parts + 1] = string.format("FLOPs: %s of %.3g", table.concat(bits, ", "), fl.task)
  end
  local text = "profile: " .. (#parts > 0 and table.concat(parts, "; ") or "no figures") .. "."
  if p.signals and #p.signals > 0 then
    local s = {}
    for i, x in ipairs(p.signals) do s[i] = x.text end
    text = text .. "\nsignals: " .. table.concat(s, "; ") .. "."
  else
    text = text .. "\nsignals: none."
  end
  return text
end

-- Rebuilds stage.profile and stage.text (for example with the duration the
-- timing stage measured from activity records). Returns both.
function M.summarize(stage, extra)
  extra = extra or {}
  if extra.duration_us then
    stage.info = stage.info or {}
    stage.info.duration_us = extra.duration_us
    local names = { cupti = "CUPTI activity", events = "CUDA events" }
    stage.info.duration_source = names[extra.source] or extra.source or "CUPTI activity"
  end
  local info = stage.info or {}
  info.flops = stage.flops
  stage.profile = M.compact(stage.roles or {}, info)
  stage.text = M.text(stage.profile)
  return stage.profile, stage.text
end

-- ---- re-exports from klab.prof ------------------------------------------------

if C then
  for _, k in ipairs { "available", "new", "metric_table", "chips", "check_metrics", "chip_name", "occupancy",
    "sass_tool", "disassemble", "sass_parse", "sass_census", "sass_join", "sass_collect" } do
    M[k] = C[k]
  end
else
  function M.available() return false, "klab.prof is not built in", "ENOLIB" end
end

return M

