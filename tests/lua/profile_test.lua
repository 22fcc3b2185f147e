-- profile_test.lua: klab.eval.profile (scripts/klab/eval/profile.lua) and klab.prof
-- (bindings/l_prof.c over host/measure/profile.c and host/measure/sass.c).
--
-- Without a GPU: the analysis on hand-made metric tables (families, FLOPs
-- by path, the verdict rule, the compact profile and its text), the SASS
-- listing parser and join through the binding, the metric table against
-- CUPTI's offline chip tables, the static census through a stand-in
-- nvdisasm, the sanitizer parser, and the stage reporting unknown cleanly.
-- With a GPU (gpu_* tests, skipped otherwise): a profiled region with
-- replay passes, the three GEMM samples (wgmma+TMA, mma.sync, naive) and a
-- kernel whose wgmma never runs.

local profile = require "klab.eval.profile"
local profiler = require "klab.eval.profiler"
local sass = require "klab.eval.sass"
local sanitizer = require "klab.eval.sanitizer"
local prof = require "klab.prof"
local gpu = require "klab.gpu"
local sq = require("klab.command").shell_quote

local run_candidate = dofile((debug.getinfo(1, "S").source:sub(2):match("^(.*)/tests/lua/") or ".") .. "/tests/gpu/run_candidate.lua")
-- The rules give a verdict and its detail; klab.eval.verdict words it.
local function worded(v, detail)
  if not v then return nil end
  return v, require("klab.eval.verdict").reason(v, detail)
end
local function rule(...) return worded(profile.verdict(...)) end
local function type_rule(...) return worded(profile.type_verdict(...)) end

local T = {}

local function need_gpu(t)
  t.need_gpu()
end

local function need_profiling(t)
  need_gpu(t)
  local ok, why = profile.available()
  if not ok then t.skip("profiling not available: " .. tostring(why)) end
end

-- GH100 metric values for a 128x128x64 bf16 GEMM on 132 CTAs: each a
-- starting point for the hand-made cases.
local M_, N_, K_ = 1024, 1024, 512
local TASK_FLOPS = 2 * M_ * N_ * K_

local function base_values()
  return {
    ["sm__inst_executed_pipe_tensor_op_gmma.sum"] = 0,
    ["smsp__inst_executed_op_tma_ld.sum"] = 0,
    ["smsp__inst_executed_op_tma_st.sum"] = 0,
    ["sm__inst_executed_pipe_tensor_op_hmma.sum"] = 0,
    ["sm__inst_executed.sum"] = 1e7,
    ["sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum"] = 0,
    ["sm__ops_path_tensor_op_hgmma_src_fp16.sum"] = 0,
    ["sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum"] = 0,
    ["sm__ops_path_tensor_op_igmma_src_int8.sum"] = 0,
    ["sm__ops_path_tensor_src_fp8.sum"] = 0,
    ["sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32.sum"] = 0,
    ["sm__ops_path_tensor_op_hmma_src_fp16.sum"] = 0,
    ["sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32.sum"] = 0,
    ["sm__ops_path_tensor_op_imma_src_int8.sum"] = 0,
    ["gpu__time_duration.sum"] = 58000,
    ["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 40,
    ["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = 30,
    ["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = 20,
    ["sm__warps_active.avg.pct_of_peak_sustained_active"] = 50,
    ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"] = 0,
    ["dram__bytes_read.sum"] = 2.2e6,
    ["dram__bytes_write.sum"] = 2.1e6,
    ["sm__cycles_elapsed.avg.per_second"] = 1.98e9,
  }
end

local function wgmma_values()
  local v = base_values()
  v["sm__inst_executed_pipe_tensor_op_gmma.sum"] = 2048
  v["smsp__inst_executed_op_tma_ld.sum"] = 1024
  -- GH100's tensor-pipe count includes the HGMMAs
  v["sm__inst_executed_pipe_tensor_op_hmma.sum"] = 2048
  v["sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum"] = TASK_FLOPS
  v["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"] = 71
  return v
end

local function mma_sync_values()
  local v = base_values()
  v["sm__inst_executed_pipe_tensor_op_hmma.sum"] = TASK_FLOPS / (2 * 16 * 8 * 16)
  v["sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32.sum"] = TASK_FLOPS
  v["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"] = 45
  return v
end

local function analyse(values, targets, chip)
  chip = chip or "GH100"
  local roles = profile.aggregate(values, chip)
  local stage = { status = "ok", arch = "sm_90a", roles = roles }
  stage.families = profile.families(roles, targets or { "wgmma", "tma" }, chip)
  stage.flops = profile.flops(roles, TASK_FLOPS, chip)
  return stage
end

-- ---- the metric table -----------------------------------------------------

function T.metric_table_rows_are_complete(t)
  local rows = profile.metric_table()
  t.ok(#rows > 40, "rows: " .. #rows)
  local chips, roles = {}, {}
  for _, r in ipairs(rows) do
    t.ok(type(r.name) == "string" and r.name:find("%.") ~= nil, "name " .. tostring(r.name))
    t.ok(type(r.verified) == "boolean")
    chips[r.chip] = (chips[r.chip] or 0) + 1
    roles[r.role] = true
  end
  t.ok(chips.GH100 and chips.GB100, "both chips listed")
  for _, need in ipairs { "inst.wgmma", "inst.tma", "flops.gmma", "flops.hmma", "flops.utc", "pct.sm", "pct.mem",
    "pct.occupancy", "pct.tensor", "bytes.dram_read", "bytes.dram_write", "time.ns" } do
    t.ok(roles[need], "role " .. need)
  end
end

function T.metric_names_exist_in_cuptis_offline_tables(t)
  local chips, err = prof.chips()
  if not chips then t.skip("CUPTI host API not available: " .. tostring(err)) end
  for _, chip in ipairs { "GH100", "GB100" } do
    local names = {}
    for _, r in ipairs(profile.metric_table()) do
      if r.chip == chip then names[#names + 1] = r.name end
    end
    local known = assert(prof.check_metrics(chip, names))
    for _, n in ipairs(names) do t.ok(known[n], n .. " on " .. chip) end
  end
  local k = assert(prof.check_metrics("GB100", { "sm__inst_executed_pipe_tensor_op_gmma.sum" }))
  t.eq(k["sm__inst_executed_pipe_tensor_op_gmma.sum"], false, "no wgmma counter on Blackwell")
  t.raises(function() prof.check_metrics("GH100", { 1 }) end, "must be a string")
end

-- The verdict set in two parts: the first needs far fewer replay passes
-- than the whole set on GH100 (counted offline from CUPTI's config image),
-- and the two parts together are the whole set.
function T.verdict_first_part_needs_few_passes(t)
  local chips, err = prof.chips()
  if not chips then t.skip("CUPTI host API not available: " .. tostring(err)) end
  local gh = {}
  for _, r in ipairs(profile.metric_table()) do if r.chip == "GH100" then gh[#gh + 1] = r end end
  local first, deferred, simt, all = profiler.verdict_first_metrics(gh), profiler.verdict_deferred_metrics(gh),
    profiler.verdict_simt_metrics(gh), profiler.verdict_metrics(gh)
  t.eq(#first + #deferred + #simt, #all, "the parts split the set")
  local in_first = {}
  for _, n in ipairs(first) do in_first[n] = true end
  for _, n in ipairs(deferred) do
    t.ok(not in_first[n], n .. " is in one part")
    t.match(n, "^sm__ops_path_tensor_op_[hi]mma_src_", "only mma.sync FLOP counters are deferred")
  end
  -- The first part is hardware counters alone on GH100, so that it can stay
  -- enabled from one candidate to the next; the SIMT arithmetic is what
  -- CUPTI counts by patching.
  for _, n in ipairs(first) do t.eq(prof.patched(n), false, n .. " is a hardware counter") end
  t.ok(#simt >= 9, #simt .. " SIMT arithmetic metrics")
  for _, n in ipairs(simt) do
    t.ok(not in_first[n], n .. " is in one part")
    t.eq(prof.patched(n), true, n .. " is counted by patching")
  end
  local p_first = assert(prof.passes("GH100", first))
  local p_all = assert(prof.passes("GH100", all))
  t.ok(p_first >= 1 and p_first <= 2, "the first part takes " .. p_first .. " passes")
  t.eq(assert(prof.passes("GH100", simt)), 1, "the SIMT part one")
  t.ok(p_all >= p_first + 3, "the whole set takes " .. p_all .. " passes")
  t.raises(function() prof.passes("GH100", {}) end, "at least one")
  local none, perr = prof.passes("GH100", { "no_such_metric.sum" })
  t.eq(none, nil, "an unknown metric is refused")
  t.ok(perr, "with a message")
end

-- ---- roles, families, FLOPs ------------------------------------------------

function T.aggregate_sums_roles_and_skips_nan(t)
  local v = wgmma_values()
  v["sm__ops_path_tensor_op_hgmma_src_fp16.sum"] = 1000
  v["sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum"] = 0 / 0
  v["smsp__inst_executed_op_tma_st.sum"] = 24
  v["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = nil
  local r = profile.aggregate(v, "GH100")
  t.eq(r["flops.gmma"], TASK_FLOPS + 1000)
  t.eq(r["inst.tma"], 1048, "loads + stores")
  t.eq(r["inst.wgmma"], 2048)
  t.eq(r["inst.hmma"], 0, "tensor-pipe count minus wgmma")
  t.eq(r["pct.dram"], nil, "missing metric: no role")
  t.eq(r["pct.sm"], 40)
  t.near(r["rate.sm_hz"], 1.98e9, 1)
  -- Another chip's names give nothing.
  local g = profile.aggregate(v, "GB100")
  t.eq(g["inst.wgmma"], nil)
  t.eq(g["pct.sm"], 40, "shared names count on both chips")
  -- GB110 uses GB100's rows.
  t.eq(profile.aggregate({ ["sm__inst_executed_pipe_tc.sum"] = 3 }, "GB110")["inst.tc"], 3)
end

-- GH100's HMMA sub-pipe count holds the HFMA2.MMA of plain code: a SIMT
-- kernel (numbers of the naive softmax on the H200) is not mma.sync, and
-- IMMA/DMMA are.
function T.hfma2_on_the_tensor_pipe_is_not_mma_sync(t)
  local v = {
    ["sm__inst_executed_pipe_tensor_op_gmma.sum"] = 0,
    ["sm__inst_executed_pipe_tensor_op_hmma.sum"] = 131072,
    ["sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"] = 131072,
    ["sm__inst_executed_pipe_tensor_op_imma.sum"] = 0,
    ["sm__inst_executed_pipe_tensor_op_dmma.sum"] = 0,
    ["smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"] = 4194304,
  }
  local r = profile.aggregate(v, "GH100")
  t.eq(r["inst.hmma"], 0, "HFMA2.MMA taken out")
  local fam = profile.families(r, { "mma.sync" }, "GH100")["mma.sync"]
  t.eq(fam.status, "not_executed", "a SIMT kernel did not run mma.sync")
  v["sm__inst_executed_pipe_tensor_op_hmma.sum"] = 131072 + 640
  v["sm__inst_executed_pipe_tensor_op_imma.sum"] = 64
  t.eq(profile.aggregate(v, "GH100")["inst.hmma"], 704, "HMMA and IMMA counted")
  -- The three counters join the first part without another pass.
  local prof = require "klab.prof"
  local rows = {}
  for _, row in ipairs(prof.metric_table()) do if row.chip == "GH100" then rows[#rows + 1] = row end end
  local first = require("klab.eval.profiler").verdict_first_metrics(rows)
  local has = {}
  for _, n in ipairs(first) do has[n] = true end
  t.ok(has["sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"] and has["sm__inst_executed_pipe_tensor_op_imma.sum"],
    "in the first part")
  local passes = prof.passes("GH100", first)
  if passes then t.eq(passes, 2, "the first part stays at 2 passes") end
end

function T.wgmma_sample_families_and_flops(t)
  local s = analyse(wgmma_values())
  t.eq(s.families.wgmma.status, "executed")
  t.eq(s.families.wgmma.executed, true)
  t.eq(s.families.wgmma.count, 2048)
  t.eq(s.families.tma.status, "executed")
  t.eq(s.families.tma.count, 1024)
  t.eq(s.flops.hgmma, TASK_FLOPS)
  t.eq(s.flops.hmma, 0)
  t.eq(s.flops.other, 0)
  t.near(s.flops.frac.hgmma, 1.0, 1e-12)
  t.eq(rule(s), nil)
end

function T.mma_sync_sample_is_caught(t)
  local s = analyse(mma_sync_values())
  t.eq(s.families.wgmma.status, "not_executed")
  t.eq(s.families.wgmma.executed, false)
  t.eq(s.families.wgmma.count, 0)
  t.eq(s.families.tma.status, "not_executed")
  t.eq(s.flops.hmma, TASK_FLOPS)
  t.eq(s.flops.hgmma, 0)
  t.near(s.flops.frac.hmma, 1.0, 1e-12)
  local v, why = rule(s)
  t.eq(v, "target_not_executed")
  t.eq(why, "wgmma and tma did not execute (0 warp instructions), though the task targets them on sm_90a; "
    .. "100.0% of the task's FLOPs went through mma.sync (HMMA) instead")
  -- With only wgmma targeted, the reason names the HMMA path.
  local s2 = analyse(mma_sync_values(), { "wgmma" })
  local v2, why2 = rule(s2)
  t.eq(v2, "target_not_executed")
  t.ok(why2:find("wgmma did not execute") and why2:find("100.0%% of the task's FLOPs went through mma.sync"), why2)
end

function T.naive_sample_has_no_tensor_flops(t)
  local s = analyse(base_values())
  t.eq(s.flops.hgmma, 0)
  t.eq(s.flops.hmma, 0)
  t.eq(s.flops.tensor, 0)
  t.eq(s.flops.other, TASK_FLOPS)
  t.near(s.flops.frac.other, 1.0, 1e-12)
  t.eq(rule(s), "target_not_executed")
end

function T.token_wgmma_with_hmma_work_is_caught(t)
  -- One wgmma per CTA, the real work through mma.sync.
  local v = mma_sync_values()
  v["sm__inst_executed_pipe_tensor_op_gmma.sum"] = 132 * 4
  v["smsp__inst_executed_op_tma_ld.sum"] = 132
  v["sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum"] = 132 * 2 * 64 * 8 * 16
  local s = analyse(v)
  t.eq(s.families.wgmma.status, "executed")
  local verdict, why = rule(s)
  t.eq(verdict, "target_not_executed")
  t.ok(why:find("carried only") and why:find("mma.sync %(HMMA%) 100.0%%"), why)
  t.eq(rule(s, { min_path_fraction = 0 }), nil, "the rule can be switched off")
  -- Half the work through wgmma passes the default threshold.
  v["sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum"] = TASK_FLOPS / 2
  t.eq(rule(analyse(v)), nil)
end

function T.unknown_families_never_give_a_verdict(t)
  local v = wgmma_values()
  v["smsp__inst_executed_op_tma_ld.sum"] = nil
  v["smsp__inst_executed_op_tma_st.sum"] = nil
  local s = analyse(v, { "wgmma", "tma", "warp.magic" })
  t.eq(s.families.tma.status, "unknown")
  t.eq(s.families.tma.executed, nil)
  t.ok(s.families.tma.reason:find("no measurement"), s.families.tma.reason)
  t.eq(s.families["warp.magic"].status, "unknown")
  t.ok(s.families["warp.magic"].reason:find("no counter"))
  t.eq(rule(s), nil)
  -- tcgen05 on Hopper is unknown, not "not executed".
  local h = analyse(wgmma_values(), { "tcgen05.mma" })
  t.eq(h.families["tcgen05.mma"].status, "unknown")
  t.ok(h.families["tcgen05.mma"].reason:find("does not exist on GH100"))
  -- A stage that could not measure has no verdict.
  t.eq(rule({ status = "unknown", families = { wgmma = { status = "not_executed" } } }), nil)
  t.eq(rule(nil), nil)
end

function T.blackwell_families(t)
  local v = {
    ["sm__inst_executed_pipe_tc.sum"] = 300,     -- UTCBAR/UTCCP count here too
    ["sm__inst_executed_pipe_tmem.sum"] = 64,
    ["smsp__inst_executed_op_tma_ld.sum"] = 10,
    ["sm__ops_path_tensor_op_utchmma_src_bf16_dst_fp32.sum"] = 0,
  }
  local targets = { "tcgen05.mma", "tcgen05.tmem", "tma" }
  local r = profile.aggregate(v, "GB100")
  local f = profile.families(r, targets, "GB100")
  t.eq(f["tcgen05.mma"].status, "not_executed", "pipe active but no UTC*MMA FLOPs")
  t.eq(f["tcgen05.tmem"].status, "executed")
  t.eq(f.tma.status, "executed")
  v["sm__ops_path_tensor_op_utchmma_src_bf16_dst_fp32.sum"] = TASK_FLOPS
  r = profile.aggregate(v, "GB100")
  f = profile.families(r, targets, "GB100")
  t.eq(f["tcgen05.mma"].status, "executed")
  t.eq(f["tcgen05.mma"].count, 300)
  -- The SASS-patched UTCMMA count wins when measured.
  v["smsp__sass_inst_executed_op_utcmma.sum"] = 128
  r = profile.aggregate(v, "GB100")
  f = profile.families(r, targets, "GB100")
  t.eq(f["tcgen05.mma"].count, 128)
  t.eq(f["tcgen05.mma"].metric_role, "inst.utcmma")
  local fl = profile.flops(r, TASK_FLOPS, "GB100")
  t.eq(fl.utc, TASK_FLOPS)
  t.eq(fl.other, 0)
  t.eq(fl.hgmma, nil, "no wgmma path on Blackwell")
  t.eq(f.wgmma, nil)
  t.eq(profile.families(r, { "wgmma" }, "GB100").wgmma.status, "unknown")
end

function T.fp8_flops_follow_the_path_that_ran(t)
  local v = base_values()
  v["sm__ops_path_tensor_src_fp8.sum"] = 1000
  v["sm__inst_executed_pipe_tensor_op_gmma.sum"] = 10
  local f = profile.flops(profile.aggregate(v, "GH100"), 2000, "GH100")
  t.eq(f.hgmma, 1000)
  t.eq(f.hmma, 0)
  t.eq(f.other, 1000)
  v["sm__inst_executed_pipe_tensor_op_gmma.sum"] = 0
  f = profile.flops(profile.aggregate(v, "GH100"), 2000, "GH100")
  t.eq(f.hgmma, 0)
  t.eq(f.hmma, 1000)
  -- No tensor measurements at all: no path figures, no fractions.
  f = profile.flops({}, 2000, "GH100")
  t.eq(f.tensor, nil)
  t.eq(f.frac, nil)
  t.eq(f.task, 2000)
end

-- A task whose tensor-core path has a type (the fp8 GEMM): bf16 wgmma after
-- a conversion meets wgmma and TMA but not the type, and the reason says
-- which type ran; the fp8 path (QGMMA, counted by the fp8 metric) passes.
function T.tensor_type_names_the_path_that_ran(t)
  local s = analyse(wgmma_values())
  s.targets = { "wgmma", "tma" }
  t.eq(s.flops.src.bf16, TASK_FLOPS)
  t.eq(rule(s), nil, "wgmma and TMA ran with all the FLOPs")
  local v, why = type_rule(s, "fp8", 0.9)
  t.eq(v, "target_not_executed")
  t.eq(why, ("the task's tensor-core path is fp8, but fp8 tensor FLOPs were 0.0%% of the task's %.4g (at least 90%% "
    .. "required); the tensor cores ran bf16 100.0%%"):format(TASK_FLOPS))
  t.eq(type_rule(s, "bf16", 0.9), nil, "bf16 is this task's type")
  t.eq(type_rule(s, nil, 0.9), nil, "no type, no rule")
  -- The fp8 path: QGMMA carries the FLOPs.
  local q = wgmma_values()
  q["sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum"] = 0
  q["sm__ops_path_tensor_src_fp8.sum"] = TASK_FLOPS
  local s8 = analyse(q)
  s8.targets = { "wgmma", "tma" }
  t.eq(s8.flops.hgmma, TASK_FLOPS)
  t.eq(rule(s8), nil)
  t.eq(type_rule(s8, "fp8", 0.9), nil)
  -- A tenth of the work on fp8, the rest on bf16: below the work fraction.
  q["sm__ops_path_tensor_src_fp8.sum"] = TASK_FLOPS / 10
  q["sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum"] = TASK_FLOPS * 0.9
  local sm = analyse(q)
  sm.targets = { "wgmma", "tma" }
  local mv, mwhy = type_rule(sm, "fp8", 0.9)
  t.eq(mv, "target_not_executed")
  t.match(mwhy, "fp8 tensor FLOPs were 10%.0%%.*the tensor cores ran bf16 90%.0%%, fp8 10%.0%%")
  -- No tensor target on this arch, or nothing measured by type: no verdict.
  s.targets = { "tma" }
  t.eq(type_rule(s, "fp8", 0.9), nil)
  s.targets = { "wgmma" }
  s.flops.src = nil
  t.eq(type_rule(s, "fp8", 0.9), nil)
  -- The fp8 GEMM task says so.
  t.eq(require("klab.task").get("gemm_fp8e4m3/4096x4096x4096").tensor_type, "fp8")
end

-- ---- "of elapsed" percentages over the kernels' span -------------------------

function T.elapsed_percentages_are_taken_over_the_kernels_span(t)
  local v = wgmma_values()
  -- The range lasted 3000 cycles, the busiest SM worked 2000 of them.
  v["sm__cycles_elapsed.max"] = 3000
  v["sm__cycles_active.max"] = 2000
  local r = profile.aggregate(v, "GH100")
  t.near(r.busy, 2 / 3, 1e-12)
  t.near(profile.over_kernels(r, "pct.sm"), 60, 1e-9)
  t.near(profile.over_kernels(r, "pct.mem"), 45, 1e-9)
  -- DRAM's share is counted in time: the kernels' span from activity
  -- records over the range's duration (time.ns = 58000 ns).
  t.near(profile.over_kernels(r, "pct.dram"), 30, 1e-9, "no kernel span yet: the SM-cycle share stands in")
  t.near(profile.over_kernels(r, "pct.dram", 29000), 40, 1e-9)
  t.eq(profile.over_kernels(r, "pct.dram", 90000), 20, "a span longer than the range counts as all of it")
  -- "of active" figures are per active cycle already: left alone.
  t.eq(profile.over_kernels(r, "pct.occupancy"), 50)
  t.eq(profile.over_kernels(r, "pct.tensor"), 71)
  local p = profile.compact(r, {})
  t.near(p.sm_pct, 60, 1e-9)
  t.near(p.dram_pct, 30, 1e-9)
  t.near(p.busy, 2 / 3, 1e-12)
  t.eq(p.occupancy_pct, 50)
  t.near(p.sm_clock_mhz, 1980, 1e-9, "no kernel span: the range's clock")
  p = profile.compact(r, { duration_us = 29 })
  t.near(p.dram_pct, 40, 1e-9)
  -- 2000 busiest-SM cycles in the kernels' 29 us.
  t.near(p.sm_clock_mhz, 2000 / 29, 1e-9, "the clock inside the kernels")
  -- Never above 100%, and the busy share never above 1.
  v["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 90
  v["sm__cycles_active.max"] = 1500
  t.eq(profile.over_kernels(profile.aggregate(v, "GH100"), "pct.sm"), 100)
  v["sm__cycles_active.max"] = 4000
  r = profile.aggregate(v, "GH100")
  t.eq(r.busy, 1)
  t.eq(profile.over_kernels(r, "pct.sm"), 90)
  -- Without both cycle counts (or with a zero) the range's figure stays.
  v["sm__cycles_active.max"] = nil
  r = profile.aggregate(v, "GH100")
  t.eq(r.busy, nil)
  t.eq(profile.over_kernels(r, "pct.sm"), 90)
  t.eq(profile.over_kernels(r, "pct.dram"), 20, "no share of any kind: the range's figure")
  t.near(profile.over_kernels(r, "pct.dram", 29000), 40, 1e-9, "the time share needs no cycle counts")
  v["sm__cycles_active.max"], v["sm__cycles_elapsed.max"] = 0, 3000
  t.eq(profile.aggregate(v, "GH100").busy, nil)
end

-- ---- the compact profile ---------------------------------------------------

local function info_for(kernel)
  return { kernel = kernel, threads = 384, blocks = 264, blocks_per_sm = 1, sm_count = 132, dynamic_smem = 197632,
    regs_per_sm = 65536, task_bytes = 2 * (M_ * K_ + N_ * K_ + M_ * N_), tensor_task = true }
end

function T.compact_profile_figures(t)
  local s = analyse(wgmma_values())
  local info = info_for { name = "gemm", registers = 96, static_smem = 64, local_bytes = 0 }
  info.flops = s.flops
  info.duration_us = 58 -- the whole range: DRAM needs no correction
  local p = profile.compact(s.roles, info)
  t.eq(p.sm_pct, 40)
  t.eq(p.mem_pct, 30)
  t.eq(p.dram_pct, 20)
  t.eq(p.occupancy_pct, 50)
  t.eq(p.tensor_pct, 71)
  t.near(p.waves, 2.0, 1e-12)
  t.eq(p.blocks_per_sm, 1)
  t.eq(p.dram_bytes, 4.3e6)
  t.near(p.dram_ratio, 4.3e6 / info.task_bytes, 1e-12)
  t.near(p.sm_clock_mhz, 1980, 1e-9)
  t.eq(#p.signals, 0, "a balanced profile raises no signal")
  local text = profile.text(p)
  t.ok(text:find("^profile: 58.0 us %(CUPTI activity%)"), text)
  t.ok(text:find("SM throughput 40.0%% of peak, memory 30.0%% %(DRAM 20.0%%%)"), text)
  t.ok(text:find("achieved occupancy 50.0%%"), text)
  t.ok(text:find("tensor pipe active 71.0%%"), text)
  t.ok(text:find("96 registers/thread, 64 B static %+ 197632 B dynamic shared memory, no local memory"), text)
  t.ok(text:find("2.00 waves %(1 block/SM%)"), text)
  t.ok(text:find("DRAM 4.30 MB = [%d.]+x the task's minimum"), text)
  t.ok(text:find("FLOPs: 100.0%% wgmma %(HGMMA%), 0.0%% mma.sync %(HMMA%), 0.0%% other of 1.07e%+09"), text)
  t.ok(text:find("\nsignals: none%.$"), text)
end

function T.compact_profile_signals_state_thresholds(t)
  local TH = profile.THRESHOLDS
  t.eq(TH.busy_pct, 60)
  t.eq(TH.low_occupancy_pct, 25)
  -- Memory-bound, low occupancy, register pressure, spilling, no tensor cores.
  local v = base_values()
  v["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = 82
  v["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = 80
  v["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 35
  v["sm__warps_active.avg.pct_of_peak_sustained_active"] = 18.75
  local s = analyse(v)
  local info = info_for { name = "gemm", registers = 168, static_smem = 0, local_bytes = 16 }
  info.flops = s.flops
  local p = profile.compact(s.roles, info)
  local names = table.concat(p.signal_names, ",")
  t.eq(names, "memory_bound,low_occupancy,register_pressure,spilling,no_tensor_cores")
  local text = profile.text(p)
  t.ok(text:find("memory%-bound %(memory throughput 82%% of peak >= 60%%, above SM 35%%%)"), text)
  t.ok(text:find("low occupancy %(achieved 18.8%% of the SM's warp slots < 25%%%)"), text)
  t.ok(text:find("register pressure %(168 registers per thread > 128; 65536 registers per SM hold at most 390"),
    text)
  t.ok(text:find("spilling or local memory %(16 bytes"), text)
  t.ok(text:find("not using the tensor cores %(0.0%% of the task's FLOPs on tensor cores < 10%%%)"), text)
  t.ok(not text:find("compute%-bound"))
  -- Compute-bound; the naive kernel on a non-tensor task gets no tensor signal.
  v["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = 20
  v["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = 10
  v["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 91
  v["sm__warps_active.avg.pct_of_peak_sustained_active"] = 90
  s = analyse(v)
  info = info_for { name = "gemm", registers = 32, static_smem = 0, local_bytes = 0 }
  info.flops, info.tensor_task = s.flops, false
  p = profile.compact(s.roles, info)
  t.eq(table.concat(p.signal_names, ","), "compute_bound")
  t.ok(profile.text(p):find("compute%-bound %(SM throughput 91%% of peak >= 60%%, above memory 20%%%)"))
  -- Exactly at the threshold counts (>=); just below does not.
  v["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 60
  t.eq(table.concat(profile.compact(profile.aggregate(v, "GH100"), {}).signal_names, ","), "compute_bound")
  v["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 59.9
  t.eq(#profile.compact(profile.aggregate(v, "GH100"), {}).signals, 0)
end

function T.summarize_adds_the_duration(t)
  local s = analyse(wgmma_values())
  s.info = info_for { name = "gemm", registers = 96, static_smem = 0, local_bytes = 0 }
  local p, text = profile.summarize(s)
  t.eq(p.duration_us, nil, "no duration before timing")
  t.ok(not text:find(" us "), text)
  p, text = profile.summarize(s, { duration_us = 812.25, source = "cupti" })
  t.eq(p.duration_us, 812.25)
  t.ok(text:find("^profile: 812.2 us %(CUPTI activity%)") or text:find("^profile: 812.3 us %(CUPTI activity%)"), text)
  t.eq(s.text, text)
  _, text = profile.summarize(s, { duration_us = 5, source = "events" })
  t.ok(text:find("%(CUDA events%)"), text)
end

-- ---- SASS through the binding ---------------------------------------------

local LISTING = table.concat({
  "//--------------------- .text.gemm --------------------------",
  "\t.section\t.text.gemm,\"ax\",@progbits",
  ".text.gemm:",
  "        /*0000*/                   LDC R1, c[0x0][0x28] ;        /* 0x00000a00ff017b82 */",
  "                                                                /* 0x000fe40000000800 */",
  "        /*0010*/               @P0 BRA `(.L_x_1) ;",
  "        /*0020*/                   HGMMA.64x8x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;",
  "        /*0030*/                   UTMALDG.2D [UR8], [UR4] ;",
  "        /*0040*/                   EXIT ;",
}, "\n") .. "\n"

function T.sass_parse_and_join(t)
  local c = prof.sass_parse(LISTING)
  t.eq(c.rows, 5)
  t.eq(c.opcodes.HGMMA, 1)
  t.eq(c.opcodes.UTMALDG, 1)
  t.eq(c.total, 5)
  t.eq(c.functions[1], "gemm")
  t.eq(table.concat(c.order, " "), "LDC BRA HGMMA UTMALDG EXIT")
  local j = prof.sass_join(LISTING, {
    { func = "gemm", offset = 0x20, count = 528 }, { func = "gemm", offset = 0x30, count = 132 },
    { func = "gemm", offset = 0x40, count = 528 }, { func = "gemm", offset = 0x44, count = 3 },
  })
  t.eq(j.opcodes.HGMMA, 528)
  t.eq(j.opcodes.UTMALDG, 132)
  t.eq(j.opcodes.EXIT, 528)
  t.eq(j.opcodes.LDC, nil)
  t.eq(j.unmatched, 1)
  t.eq(j.unmatched_count, 3)
  t.raises(function() prof.sass_join(LISTING, { { func = "gemm" } }) end, "offset and count")
  local tool, err, code = prof.sass_tool()
  if not tool then
    t.eq(code, "ENOTFOUND")
    t.ok(err:find("nvdisasm not found"), err)
    local r, e2, c2 = profile.sass_census("\127ELFnot-a-cubin")
    t.eq(r, nil)
    t.eq(c2, "ENOTFOUND")
    t.ok(e2:find("nvdisasm not found"))
  end
end

-- A folder holding LISTING and a stand-in nvdisasm that prints it (after
-- delay seconds), for child klab processes run with KLAB_NVDISASM set.
local function standin_nvdisasm(t, delay)
  local dir = t.tmpdir()
  local lf = assert(io.open(dir .. "/listing.txt", "w"))
  lf:write(LISTING)
  lf:close()
  local sf = assert(io.open(dir .. "/nvdisasm", "w"))
  sf:write("#!/bin/sh\n" .. (delay and ("sleep " .. delay .. "\n") or "") .. "cat '" .. dir .. "/listing.txt'\n")
  sf:close()
  assert(os.execute("chmod +x '" .. dir .. "/nvdisasm'"))
  return dir
end

-- The static census inside the stage, with a stand-in nvdisasm (a child
-- klab, so KLAB_NVDISASM can be set).
function T.stage_records_static_census_without_a_gpu(t)
  if gpu.available() then t.skip("a GPU is present: the GPU tests cover the stage") end
  local dir = standin_nvdisasm(t)
  local script = [[
    local profiler = require "klab.eval.profiler"
    local st = profiler.stage(nil, function() return true end,
      { targets = { sm_90a = { "wgmma", "tma" } }, flops = 100 }, "sm_90a", { cubin = "\127ELF fake" })
    io.write(st.status, " ", tostring(st.sass and st.sass.available), " ",
      tostring(st.sass and st.sass.static and st.sass.static.opcodes.HGMMA), " ",
      tostring(st.sass and st.sass.static_families.wgmma), " ",
      tostring(st.sass and st.sass.static_families.tma), " ", st.families.wgmma.status, " ",
      tostring(st.verdict), "\n")
  ]]
  local p = io.popen("KLAB_NVDISASM=" .. sq(dir .. "/nvdisasm") .. " " .. sq(t.klab) .. " -e " .. sq(script) .. " 2>&1")
  local out = p:read("a")
  p:close()
  t.eq(out, "unknown true 1 1 1 unknown nil\n")
end

-- The census in the background gives what the synchronous one gives; its
-- finish answers the same table when asked again; a missing tool is a
-- reason, not an error; a handle never finished is collected quietly.
function T.static_census_in_the_background(t)
  local dir = standin_nvdisasm(t, 0.2)
  local script = [[
    local sass = require "klab.eval.sass"
    local targets = { "wgmma", "tma" }
    local finish = sass.static_start("\127ELF fake", targets)
    local a = finish()
    local b = sass.static("\127ELF fake", targets)
    io.write(tostring(a.available), " ", a.static.opcodes.HGMMA, " ", a.static_families.wgmma, " ",
      a.static_families.tma, " ", tostring(finish() == a), " ", tostring(a.static.rows == b.static.rows), "\n")
    sass.static_start("\127ELF fake", targets)   -- never finished
    collectgarbage()
    collectgarbage()
  ]]
  assert(os.execute("mkdir '" .. dir .. "/tmp'"))
  local p = io.popen("TMPDIR=" .. sq(dir .. "/tmp") .. " KLAB_NVDISASM=" .. sq(dir .. "/nvdisasm") .. " " ..
    sq(t.klab) .. " -e " .. sq(script) .. " 2>&1")
  local out = p:read("a")
  p:close()
  t.eq(out, "true 1 1 1 true true\n")
  p = io.popen("ls -A '" .. dir .. "/tmp'")
  t.eq(p:read("a"), "", "no temporary file left behind")
  p:close()
  p = io.popen("KLAB_NVDISASM=/nonexistent KLAB_CUOBJDUMP=/nonexistent '" .. t.klab .. "' -e '" ..
    [[local r = require("klab.eval.sass").static_start("x", {"wgmma"})() ]] ..
    [[io.write(tostring(r.available), " ", r.code, " ", tostring(r.reason:find("nvdisasm") ~= nil))' 2>&1]])
  out = p:read("a")
  p:close()
  t.eq(out, "false ENOTFOUND true")
end

-- ---- the stage without a GPU -------------------------------------------------

function T.stage_without_a_gpu_says_unknown(t)
  if gpu.available() then t.skip("a GPU is present") end
  local ok, why, code = profile.available()
  t.eq(ok, false)
  t.ok(type(why) == "string" and why ~= "", "reason")
  t.ok(code == "ENODRIVER" or code == "ENOLIB", tostring(code))
  local ran = 0
  local st = profiler.stage(nil, function() ran = ran + 1 return true end,
    { targets = { sm_90a = { "wgmma", "tma" } }, flops = TASK_FLOPS }, "sm_90a", {})
  t.eq(st.status, "unknown")
  t.eq(ran, 0, "nothing ran")
  t.ok(st.reason:find("^profile stage failed") or st.reason:find("^profiling unavailable"), st.reason)
  t.eq(st.families.wgmma.status, "unknown")
  t.eq(st.families.tma.status, "unknown")
  t.eq(st.verdict, nil)
  t.eq(st.verified, false)
  t.ok(type(st.text) == "string" and st.text:find("^profile: "), st.text)
  -- Garbage in: still a table, never an error.
  local g = profiler.stage(nil, nil, nil, nil, nil)
  t.eq(g.status, "unknown")
  local cn, cerr, ccode = prof.chip_name()
  t.eq(cn, nil)
  t.eq(ccode, "ENODRIVER", tostring(cerr))
end

-- Keeping the range profiler enabled is a process setting (the instruction
-- stage sets it for each measurement: on unless the evaluation asks
-- otherwise); release with nothing enabled does nothing.
function T.profiler_persistence_is_a_setting(t)
  local was = prof.persistent()
  t.eq(type(was), "boolean")
  t.eq(prof.persistent(false), false)
  t.eq(prof.persistent(), false)
  t.eq(prof.persistent(true), true)
  t.raises(function() prof.persistent("yes") end, "boolean expected")
  prof.release()
  t.eq(prof.persistent(), true)
  prof.persistent(was)
end

function T.profiler_needs_a_context(t)
  t.raises(function() prof.new(nil) end, "Context")
  t.raises(function() prof.new({}) end, "Context")
  t.raises(function() prof.occupancy(nil, 1) end)
  t.raises(function() prof.sass_collect(nil, function() end) end, "Context")
end

function T.sanitizer_output_parser(t)
  local out = table.concat({
    "========= COMPUTE-SANITIZER",
    "========= Invalid __global__ write of size 4 bytes",
    "=========     at gemm+0x1d0",
    "=========     by thread (0,0,0) in block (0,0,0)",
    "========= Invalid __global__ write of size 4 bytes",
    "========= ERROR SUMMARY: 2 errors",
  }, "\n")
  local n, first = sanitizer.parse(out)
  t.eq(n, 2)
  t.eq(first[1], "Invalid __global__ write of size 4 bytes")
  t.eq(#first, 2)
  t.eq(sanitizer.parse("========= ERROR SUMMARY: 0 errors\n"), 0)
  t.eq(sanitizer.parse("no summary"), nil)
end

-- Where klab looks for ncu and compute-sanitizer: the variable alone when
-- set, else CUDA_HOME/bin, else PATH.
function T.nvidia_tools_are_found_where_documented(t)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "/bin' '" .. dir .. "/path'"))
  for _, f in ipairs { dir .. "/bin/ncu", dir .. "/path/ncu", dir .. "/path/compute-sanitizer", dir .. "/mine" } do
    assert(io.open(f, "w")):close()
  end
  local function find(env, name, var)
    local cmd = string.format("env %s '%s' -e 'print(require(\"klab.eval.sanitizer\").find_tool(\"%s\", %s))'", env,
      t.klab, name, var and ('\"' .. var .. '\"') or "nil")
    local p = io.popen(cmd)
    local out = p:read("l")
    p:close()
    return out
  end
  local base = string.format("CUDA_HOME='%s' PATH='%s/path'", dir, dir)
  t.eq(find(base, "ncu", "KLAB_NCU"), dir .. "/bin/ncu", "CUDA_HOME/bin first")
  t.eq(find(base, "compute-sanitizer", "KLAB_SANITIZER"), dir .. "/path/compute-sanitizer", "then PATH")
  t.eq(find(base .. " KLAB_NCU='" .. dir .. "/mine'", "ncu", "KLAB_NCU"), dir .. "/mine", "the variable wins")
  t.eq(find(base .. " KLAB_NCU='" .. dir .. "/absent'", "ncu", "KLAB_NCU"), "nil",
    "a variable naming nothing finds nothing")
  t.eq(find(base, "nsys", nil), "nil", "absent everywhere")
  os.execute("rm -rf '" .. dir .. "'")
end

function T.ncu_comparison_parser_selftest(t)
  local p = io.popen("cd '" .. t.root .. "' && '" .. t.klab .. "' tests/gpu/profile_vs_ncu.lua --selftest 2>&1")
  local out = p:read("a")
  local ok = p:close()
  t.eq(out, "selftest: ok\n")
  t.ok(ok, "exit status 0")
end

-- ---- GPU ---------------------------------------------------------------------

local COUNT_PTX = [[
.version 8.0
.target sm_80
.address_size 64
.visible .entry klab_count(.param .u64 out)
{
    .reg .u64 %rd<4>;
    .reg .u32 %r<3>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.u64 %rd2, %rd2, %rd3;
    st.global.u32 [%rd2], %r1;
    ret;
}
]]

-- A context, the counting kernel, its output and a profiler of the whole table.
local function count_setup(t)
  need_profiling(t)
  local ctx = assert(gpu.context(0))
  local mod = assert(ctx:load(COUNT_PTX))
  local fn = assert(mod:func("klab_count"))
  local out = assert(ctx:alloc(4 * 128))
  return ctx, fn, out, assert(profile.new(ctx)), mod
end

function T.gpu_profiler_replays_the_region(t)
  local ctx, fn, out, p, mod = count_setup(t) -- mod: the kernel's module, held for the test
  local info = p:info()
  t.ok(info.chip == "GH100" or info.chip == "GB100" or #info.metrics > 0, "chip " .. tostring(info.chip))
  local prepared, ran = {}, {}
  local values, minfo = p:measure(function(pass)
    ran[#ran + 1] = pass
    return ctx:launch(fn, { grid = { 1 }, block = { 128 }, args = { out } })
  end, function(pass)
    prepared[#prepared + 1] = pass
    out:fill(0)
    return true
  end)
  t.ok(values, tostring(minfo))
  if not values then return end
  t.ok(minfo.passes >= 1, "passes " .. minfo.passes)
  t.eq(#ran, minfo.passes)
  t.eq(#prepared, minfo.passes)
  t.eq(ran[1], 1)
  t.eq(prepared[#prepared], minfo.passes)
  t.eq(values["sm__inst_executed_pipe_tensor_op_gmma.sum"] or 0, 0)
  t.ok((values["sm__inst_executed.sum"] or 0) > 0, "instructions counted")
  -- The profiler is reusable (one per worker process).
  local again = p:measure(function() return ctx:launch(fn, { grid = { 1 }, block = { 128 }, args = { out } }) end)
  t.ok(again, "second measurement")
  -- A run that fails stops the measurement with its message and code.
  local r, msg, code = p:measure(function() return nil, "launch refused", "EPLAN" end)
  t.eq(r, nil)
  t.eq(msg, "launch refused")
  t.eq(code, "EPLAN")
  -- A raise is re-raised after cleanup, and the profiler still works.
  t.raises(function() p:measure(function() error("boom") end) end, "boom")
  t.ok(p:measure(function() return ctx:launch(fn, { grid = { 1 }, block = { 128 }, args = { out } }) end),
    "works after a raise")
  -- No nesting.
  local inner
  p:measure(function()
    inner = { p:measure(function() return true end) }
    return ctx:launch(fn, { grid = { 1 }, block = { 128 }, args = { out } })
  end)
  t.eq(inner[1], nil)
  t.eq(inner[3], "EINVAL")
  t.eq(p:free(), true)
  t.eq(p:free(), false)
  t.ok(tostring(p):find("freed"))
end

-- The range profiler stays enabled between measurements (its start is
-- paid once per worker): a kept one counts what a fresh one counts, and
-- CUPTI's activity API still times kernels while it is kept. Only a
-- session of hardware counters is kept: one with a patched metric (the
-- whole table has them) is enabled and disabled every time.
function T.gpu_profiler_kept_enabled_counts_the_same_and_timing_runs(t)
  local ctx, fn, out, whole, mod = count_setup(t) -- mod: the kernel's module, held for the test
  local function region() return ctx:launch(fn, { grid = { 1 }, block = { 128 }, args = { out } }) end
  local was = prof.persistent()
  prof.persistent(true)
  local w1, wi1 = assert(whole:measure(region))
  local _, wi2 = assert(whole:measure(region))
  t.ok(w1 and wi1.reused == false and wi2.reused == false, "a session with patched metrics is never kept")
  whole:free()
  local p = assert(profile.new(ctx, { metrics = profiler.verdict_first_metrics() }))
  for _, name in ipairs(p:info().metrics) do t.eq(prof.patched(name), false, name) end
  t.eq(prof.persistent(false), false)
  local fresh, finfo = p:measure(region)
  t.ok(fresh, tostring(finfo))
  if not fresh then prof.persistent(was) return end
  t.eq(finfo.reused, false)
  t.eq(prof.persistent(true), true)
  local first, i1 = assert(p:measure(region))
  t.eq(i1.reused, false, "the first measurement after a disable enables it")
  local kept, i2 = assert(p:measure(region))
  t.eq(i2.reused, true, "the second finds it enabled")
  for _, name in ipairs(i2.metrics) do
    if name:find("inst_executed") then
      t.eq(kept[name], fresh[name], name)
      t.eq(first[name], fresh[name], name)
    end
  end
  -- Timing with the profiler kept enabled.
  local timing = require "klab.timing"
  local r, msg, code = timing.measure(ctx, { runs = { { func = fn, grid = { 1 }, block = { 128 }, args = { out } } },
    min_samples = 10, max_samples = 20, budget_s = 1, method = "cupti" })
  t.ok(r, tostring(msg) .. " " .. tostring(code))
  if r then t.ok(r.candidate.median > 0 and r.candidate.n >= 10, "median " .. tostring(r.candidate.median)) end
  -- And profiling again after timing: still kept, still the same counts.
  local after, i3 = assert(p:measure(region))
  t.eq(i3.reused, true)
  t.eq(after["sm__inst_executed.sum"], fresh["sm__inst_executed.sum"])
  prof.release()
  local again, i4 = assert(p:measure(region))
  t.eq(i4.reused, false, "released: enabled again")
  t.eq(again["sm__inst_executed.sum"], fresh["sm__inst_executed.sum"])
  prof.persistent(was)
  p:free()
end

local function sample(t, name, shape)
  need_profiling(t)
  local props = assert(gpu.device(0))
  if props.arch ~= "sm_90a" then t.skip("the GEMM samples need sm_90a, this is " .. props.arch) end
  local task = require("klab.task").get("gemm_bf16/" .. (shape or "4096x4096x4096"))
  local stage, extra = run_candidate(task, t.root .. "/tasks/gemm/samples/" .. name, { time = true })
  t.ok(stage, tostring(extra))
  if stage then
    io.stderr:write("[profile] ", name, ": ", stage.status, " ", tostring(stage.reason or ""), "\n", stage.text, "\n")
  end
  return stage, task
end

function T.gpu_wgmma_sample_executes_wgmma_and_tma(t)
  local st, task = sample(t, "wgmma_tma")
  if not st then return end
  t.eq(st.status, "ok", st.reason)
  t.eq(st.families.wgmma.status, "executed")
  t.eq(st.families.tma.status, "executed")
  t.ok(math.abs(st.flops.hgmma / task.flops - 1) < 0.01, "HGMMA FLOPs within 1% of 2MNK: " .. st.flops.hgmma)
  t.eq(st.verdict, nil, st.verdict_reason)
  t.eq(st.verified, true)
  t.ok(st.profile.duration_us and st.profile.duration_us > 0, "duration from activity records")
  -- The range holds launch latency and the closing sync as well: the
  -- kernels' share of it is measured and lies in (0, 1].
  local busy = st.profile.busy
  t.ok(busy and busy > 0 and busy <= 1, "busy share of the range: " .. tostring(busy))
  t.ok(st.profile.sm_pct and st.profile.sm_pct > 0 and st.profile.sm_pct <= 100, tostring(st.profile.sm_pct))
  if st.sass and st.sass.available then
    t.ok((st.sass.static.opcodes.HGMMA or 0) > 0, "static census lists HGMMA")
  end
end

function T.gpu_mma_sync_sample_uses_hmma(t)
  local st, task = sample(t, "mma_sync")
  if not st then return end
  t.eq(st.status, "ok", st.reason)
  t.eq(st.families.wgmma.status, "not_executed")
  t.eq(st.families.wgmma.count, 0)
  t.ok(math.abs(st.flops.hmma / task.flops - 1) < 0.01, "HMMA FLOPs = 2MNK: " .. st.flops.hmma)
  t.eq(st.verdict, "target_not_executed")
end

-- The evaluation's own instruction stage (the verdict set, not the full
-- profile): a wgmma kernel is judged from the first part alone, an
-- mma.sync kernel gets its HMMA FLOPs measured by the second.
function T.gpu_verdict_set_measures_mma_sync_flops_only_when_hmma_ran(t)
  need_profiling(t)
  local props = assert(gpu.device(0))
  if props.arch ~= "sm_90a" then t.skip("the GEMM samples need sm_90a, this is " .. props.arch) end
  local task = require("klab.task").get("gemm_bf16/4096x4096x4096")
  local function stage(name)
    local r = assert(require("klab.eval").run_local(task, t.root .. "/tasks/gemm/samples/" .. name,
      { stages = { "load", "instructions" }, timing = false }))
    local st = r.stages.instructions
    t.ok(st, name .. ": " .. tostring(r.verdict) .. " " .. tostring(r.reason))
    return st or {}
  end
  local w = stage("wgmma_tma")
  t.eq(w.status, "ok", w.reason)
  t.eq(w.roles and w.roles["flops.hmma"], 0, "no HMMA ran, so none of its FLOPs")
  t.ok(w.inferred and w.inferred["flops.hmma"], "and they were not collected")
  t.ok(w.passes and w.passes <= 2, "wgmma judged in " .. tostring(w.passes) .. " passes")
  -- Its tensor FLOPs meet the work rule: the patched SIMT count is not taken.
  t.match(tostring(w.parts and w.parts.simt), "^not measured: the tensor FLOPs")
  t.eq(w.flops and w.flops.simt, nil, "no SIMT count")
  t.eq(w.verdict, nil, w.verdict_reason)
  -- A SIMT kernel's HFMA2.MMA is not mma.sync; its work is SIMT arithmetic,
  -- which the third part counts (one patched pass).
  local n = stage("naive")
  t.eq(n.status, "ok", n.reason)
  t.ok(n.inferred and n.inferred["flops.hmma"], "naive: mma.sync FLOPs not collected (tensor pipe "
    .. tostring(n.roles and n.roles["inst.tensor_pipe"]) .. ", hfma2 " .. tostring(n.roles and n.roles["inst.tensor_hfma2"]) .. ")")
  t.eq(n.parts and n.parts.simt, 1, "the SIMT part measured")
  t.ok(n.flops and n.flops.simt and n.flops.simt >= 0.9 * task.flops, "SIMT FLOPs " .. tostring(n.flops and n.flops.simt))
  t.ok(n.passes and n.passes <= 3, "naive judged in " .. tostring(n.passes) .. " passes")
  t.eq(n.verdict, "target_not_executed")
  local m = stage("mma_sync")
  t.eq(m.status, "ok", m.reason)
  t.eq(m.inferred, nil, "HMMA ran: its FLOPs are measured")
  t.ok(m.flops and m.flops.hmma and math.abs(m.flops.hmma / task.flops - 1) < 0.01,
    "HMMA FLOPs = 2MNK: " .. tostring(m.flops and m.flops.hmma))
  t.ok(m.passes and m.passes > w.passes, "the second part adds passes: " .. tostring(m.passes))
  t.match(tostring(m.parts and m.parts.simt), "^not measured: the tensor FLOPs")
  t.eq(m.verdict, "target_not_executed")
end

-- A task without a work rule never takes the patched SIMT count: the naive
-- softmax is judged from the hardware counters alone, in their 2 passes.
function T.gpu_verdict_set_skips_simt_where_no_work_rule(t)
  need_profiling(t)
  local task = require("klab.task").get("softmax_bf16/1000x1023")
  t.eq(task.work, nil, "softmax has no work rule")
  local r = assert(require("klab.eval").run_local(task, t.root .. "/tasks/softmax/samples/naive",
    { stages = { "load", "instructions" }, timing = false }))
  local st = r.stages.instructions or {}
  t.eq(st.status, "ok", st.reason)
  t.match(tostring(st.parts and st.parts.simt), "^not measured: the task has no work rule")
  t.eq(st.passes, st.parts and st.parts.first, "the first part alone")
  t.eq(st.verdict, nil, st.verdict_reason)
end

function T.gpu_naive_sample_has_no_tensor_flops(t)
  local st, task = sample(t, "naive", "1000x1000x1000")
  if not st then return end
  t.eq(st.status, "ok", st.reason)
  t.eq(st.flops.tensor, 0)
  t.eq(st.flops.other, task.flops)
  t.eq(st.verdict, "target_not_executed")
  local names = table.concat(st.profile.signal_names, ",")
  t.ok(names:find("no_tensor_cores"), names)
  -- Its HFMA2.MMA (bf16 arithmetic on the tensor pipe) is not mma.sync:
  -- judged in the first part's passes alone.
  t.eq(st.roles["inst.hmma"], 0, "tensor pipe " .. tostring(st.roles["inst.tensor_pipe"]) .. ", hfma2 "
    .. tostring(st.roles["inst.tensor_hfma2"]))
end

-- tasks/gemm/bad/wgmma_never_runs: the naive kernel plus a wgmma behind a
-- branch that never runs (K is never 0xffffffff): the static census lists
-- HGMMA, the counters say it did not run.
function T.gpu_wgmma_that_never_runs_is_target_not_executed(t)
  need_profiling(t)
  local props = assert(gpu.device(0))
  if props.arch ~= "sm_90a" then t.skip("needs sm_90a") end
  local task = require("klab.task").get("gemm_bf16/1000x1000x1000")
  local st, err = run_candidate(task, t.root .. "/tasks/gemm/bad/wgmma_never_runs")
  t.ok(st, tostring(err))
  if not st then return end
  io.stderr:write("[profile] hidden wgmma: ", st.status, "\n", st.text, "\n")
  t.eq(st.status, "ok", st.reason)
  t.eq(st.families.wgmma.status, "not_executed")
  t.eq(st.verdict, "target_not_executed")
  t.ok(st.verdict_reason:find("^wgmma and tma did not execute"), st.verdict_reason)
  if st.sass and st.sass.available then
    t.ok((st.sass.static_families.wgmma or 0) > 0, "the static census still lists wgmma")
  else
    io.stderr:write("[profile] no disassembler: static census not checked (",
      tostring(st.sass and st.sass.reason), ")\n")
  end
end

-- In a child klab: the SASS Metrics API is configured once per process, and
-- this runner's other tests use the range profiler.
function T.gpu_sass_executed_histogram(t)
  need_profiling(t)
  local props = assert(gpu.device(0))
  if props.arch ~= "sm_90a" then t.skip("needs sm_90a") end
  if not prof.sass_tool() then t.skip("no nvdisasm") end
  local script = [[
    local run_candidate = dofile(ROOT .. "/tests/gpu/run_candidate.lua")
    local task = require("klab.task").get("gemm_bf16/4096x4096x4096")
    local st, err = run_candidate(task, ROOT .. "/tasks/gemm/samples/wgmma_tma", { sass_executed = true })
    if not st then print("ERR " .. tostring(err)) return end
    local ex = st.sass and st.sass.executed
    if not ex then print("ERR " .. tostring(st.sass and st.sass.executed_error)) return end
    print(string.format("OK %d %d %d %d", ex.opcodes.HGMMA or 0, st.families.wgmma.count or -1, ex.unmatched,
      ex.opcodes.UTMALDG or 0))
  ]]
  local cmd = string.format("cd %s && %s -e 'ROOT=%q' -e %s 2>&1", sq(t.root), sq(t.klab), t.root, sq(script))
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  local hg, wg, un, tma = out:match("OK (%d+) (%-?%d+) (%d+) (%d+)")
  t.ok(hg, out)
  if not hg then return end
  hg, wg, un, tma = tonumber(hg), tonumber(wg), tonumber(un), tonumber(tma)
  t.ok(hg > 0, "HGMMA executed")
  t.eq(hg, wg, "SASS-metric HGMMA count = range-profiler wgmma count")
  t.eq(un, 0, "every record matched a listing row")
  t.ok(tma > 0, "UTMALDG executed")
end

return T
