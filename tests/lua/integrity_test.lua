-- integrity_test.lua: the rules a timed run is held to, in the parts that
-- need no GPU: what the compiler admits (printf, assert) and refuses (device
-- malloc, device-side launches however spelled), the module globals klab
-- restores, the work rule and the physical floor.
local jit = require "klab.jit"
local profile = require "klab.eval.profile"
local peaks = require "klab.eval.peaks"

local T = {}

local function compile(src)
  return jit.compile { source = src, lang = "cuda", arch = "sm_90a", name = "kernel.cu" }
end

function T.printf_and_assert_compile(t)
  local r, err = compile([[
extern "C" __global__ void k(float *x, unsigned n) {
  assert(n > 0);
  if (n == 12345) printf("n=%u\n", n);
  x[threadIdx.x] = 1.0f;
}]])
  t.ok(r, "printf and assert compile: " .. tostring(err))
  local sample = assert(io.open("tasks/gemm/samples/printf_assert/kernel.cu")):read("a")
  t.ok(compile(sample), "the printf/assert GEMM sample compiles")
end

function T.device_malloc_is_refused(t)
  local r, err, code = compile([[
extern "C" __global__ void k(float *x) { float *p = (float *)malloc(16); p[0] = 1; x[0] = p[0]; free(p); }]])
  t.eq(r, nil)
  t.eq(code, "EREJECT")
  t.match(err, "device%-side malloc/free is not allowed")
end

function T.device_launches_are_refused_however_spelled(t)
  local cases = {
    [[#include <cuda_device_runtime_api.h>
extern "C" __global__ void k(float *x) { void *b = cudaGetParameterBuffer(64, 8); x[0] = b ? 1 : 0; }]],
    [[extern "C" __global__ void child(float *x) { x[0] = 1; }
extern "C" __global__ void k(float *x) { child<<<1, 1>>>(x); }]],
  }
  for i, src in ipairs(cases) do
    local r, err, code = compile(src)
    t.eq(r, nil, "case " .. i)
    t.eq(code, "EREJECT", "case " .. i .. ": " .. tostring(err))
    t.match(tostring(err), "device%-side kernel launch")
  end
end

function T.module_globals_are_listed(t)
  local r = assert(compile([[
__device__ float bank[1000];
static __device__ int counter;
__device__ int table_[4] = {1, 2, 3, 4};
extern "C" __global__ void k(float *x) { bank[threadIdx.x] += x[0]; counter++; x[1] = table_[threadIdx.x & 3]; }]]))
  local gs = assert(jit.globals(r.cubin))
  local by = {}
  for _, g in ipairs(gs) do by[g.name] = g end
  t.eq(by.bank.bytes, 4000)
  t.eq(by.bank.section, ".nv.global")
  t.eq(by.counter.bytes, 4)
  t.eq(by.table_.section, ".nv.global.init")
  t.eq(by.table_.bytes, 16)
  t.ok(by.bank.section_bytes >= by.bank.offset + by.bank.bytes, "the section holds the variable")
  local none = assert(jit.globals(assert(compile('extern "C" __global__ void k(float *x) { x[0] = 1; }')).cubin))
  t.eq(#none, 0)
  local bad, msg = jit.globals("not a cubin")
  t.eq(bad, nil)
  t.ok(msg ~= nil)
end

-- The work rule on measured figures: tensor-core FLOPs by path plus the
-- SIMT pipes' (an FMA is two FLOPs).
function T.work_rule(t)
  local roles = { ["flops.gmma"] = 0, ["flops.hmma"] = 0, ["ops.ffma"] = 1e6, ["ops.fadd"] = 10 }
  local fl = profile.flops(roles, 2e6 + 10, "GH100")
  t.eq(fl.simt, 2e6 + 10)
  t.eq(fl.executed, 2e6 + 10)
  t.near(fl.frac.executed, 1, 1e-12)
  local stage = { status = "ok", flops = fl }
  t.eq(profile.work_verdict(stage, 0.9), nil, "all the work executed")
  stage.flops = profile.flops({ ["flops.gmma"] = 1e5, ["ops.ffma"] = 1e4 }, 2e6, "GH100")
  local v, detail = profile.work_verdict(stage, 0.9)
  t.eq(v, "insufficient_work")
  t.match(require("klab.eval.verdict").reason(v, detail), "6%.0%% of the task's")
  t.eq(profile.work_verdict(stage, nil), nil, "a task without a work rule")
  t.eq(profile.work_verdict({ status = "unknown", flops = stage.flops }, 0.9), nil, "unmeasured: no verdict")
  -- Without the SIMT counts nothing is claimed about the total.
  local partial = profile.flops({ ["flops.gmma"] = 1e5 }, 2e6, "GH100")
  t.eq(partial.executed, nil)
  t.eq(profile.work_verdict({ status = "ok", flops = partial }, 0.9), nil)
end

function T.physical_floor_figures(t)
  t.eq(peaks.tflops("sm_90a", "bf16", "tensor"), 989.4)
  t.eq(peaks.tflops("sm_90a", "bf16", "simt"), 133.8)
  t.eq(peaks.tflops("sm_90a", "f32"), 494.7, "f32 arithmetic can go through TF32 tensor cores")
  t.eq(peaks.tflops("sm_75", "bf16"), nil)
  local bw = peaks.dram_bytes_per_s { mem_clock_khz = 3201000, bus_width_bits = 6144 }
  t.near(bw / 1e12, 4.917, 0.001)
  t.eq(peaks.dram_bytes_per_s {}, nil)
end

-- The job tells the worker which globals to restore; every GEMM task
-- requires 90% of its FLOPs.
function T.job_carries_globals_and_work(t)
  local prepare = require "klab.eval.prepare"
  local task = require("klab.task").get("gemm_bf16/1000x1000x1000")
  local cand = assert(require("klab.eval.candidate").load("tasks/gemm/bad/bank_by_pointer"))
  local run = { task = task, cand = cand, arch = "sm_90a", opts = {}, result = { stages = {} } }
  t.ok(require("klab.eval.stages").run_caller(run), tostring(run.result.reason))
  local names = {}
  for _, g in ipairs(run.job.candidate.globals or {}) do names[g.name] = true end
  t.ok(names.g_bank and names.g_key and names.g_valid, "the bank's globals are listed")
  t.eq(run.job.task.work, 0.9)
  t.eq(run.job.task.total_units, 1000 * 1000)
  prepare.cleanup(run)
  prepare.finish(run)
end

return T
