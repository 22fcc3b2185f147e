-- experiment_test.lua: klab.experiment.extract, klab.experiment.prompt, klab.experiment.policy, klab.progress
-- and klab.experiment; full multi-turn sweeps against the scripted model
-- server (tests/server/model_server.py) with every fault, replay, resume
-- after an interruption, and the API-key test. Without a GPU the evaluations
-- stop after the static stages (verdict unknown), which is all these need.

local experiment = require "klab.experiment"
local extract = require "klab.experiment.extract"
local prompt = require "klab.experiment.prompt"
local policy = require "klab.experiment.policy"
local progress = require "klab.progress"
local store = require "klab.store"
local cjson = require "cjson"

local T = {}

-- ---- helpers -------------------------------------------------------------------

-- The scripted model server (tests/server/model_server.lua).
local function with_server(t, fn) return dofile(t.root .. "/tests/server/model_server.lua").with(t, fn) end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

local NAIVE_CODE = [[
typedef unsigned short bf16_t;
static __device__ __forceinline__ float bf(bf16_t h) { return __uint_as_float((unsigned)h << 16); }
static __device__ __forceinline__ bf16_t tobf(float f) { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
extern "C" __global__ void gemm(const bf16_t *A, const bf16_t *B, bf16_t *C, unsigned M, unsigned N, unsigned K)
{
    unsigned n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (unsigned k = 0; k < K; ++k) acc = fmaf(bf(A[(size_t)m * K + k]), bf(B[(size_t)n * K + k]), acc);
    C[(size_t)m * N + n] = tobf(acc);
}
]]
local NAIVE_PLAN = [[
local M, N, K = dims.M, dims.N, dims.K
return { launches = { { kernel = "gemm", grid = { (N + 15) // 16, (M + 15) // 16, 1 }, block = { 16, 16, 1 },
  args = { { buffer = "A" }, { buffer = "B" }, { buffer = "C" }, { u32 = M }, { u32 = N }, { u32 = K } } } } }
]]
local NAIVE = "A simple kernel.\n\n```cuda\n" .. NAIVE_CODE .. "```\n\n```lua\n" .. NAIVE_PLAN .. "```\n"
local BROKEN = "```cuda\n" .. NAIVE_CODE:gsub("float acc = 0.0f;", "float acc = 0.0f") .. "```\n"
local NOCODE = "I would tile the output 128x128 and stage K through shared memory."

local TASK = "gemm_bf16/123x457x789"

local function oa_model(s, extra)
  local m = { name = "oa", provider = "openai", model = "test-oa", base_url = s.base .. "/v1", concurrency = 2,
              retry = { attempts = 3, base = 0.05, max = 0.2, budget = 30 }, timeout = 10, connect_timeout = 5 }
  for k, v in pairs(extra or {}) do m[k] = v end
  return m
end

local function an_model(s, extra)
  local m = { name = "an", provider = "anthropic", model = "test-an", base_url = s.base, concurrency = 2, max_tokens = 1000,
              retry = { attempts = 3, base = 0.05, max = 0.2, budget = 30 }, timeout = 10, connect_timeout = 5 }
  for k, v in pairs(extra or {}) do m[k] = v end
  return m
end

-- The stored turns of an experiment: key "model/task/tag/replica" -> list of {turn, verdict, candidate}.
local function turns_of(db, name)
  local out = {}
  for _, r in ipairs(db:query([[SELECT t.model, t.task, t.tag, t.replica, u.turn, u.verdict, u.candidate, u.reason
      FROM turns u JOIN trajectories t ON t.id = u.trajectory_id JOIN experiments e ON e.id = t.experiment_id
      WHERE e.name = ? ORDER BY t.model, t.task, t.tag, t.replica, u.turn]], name)) do
    local k = table.concat({ r.model, r.task, r.tag, r.replica }, "/")
    out[k] = out[k] or {}
    table.insert(out[k], r)
  end
  return out
end

-- ---- extraction ------------------------------------------------------------------

T.extract_picks_the_last_kernel_and_the_plan = function(t)
  local text = "First try:\n```cuda\nextern \"C\" __global__ void gemm() { /* v1 */ }\n```\n" ..
    "A helper:\n```cpp\n__device__ int helper() { return 1; }\n```\n" ..
    "Final:\n~~~cu\nextern \"C\" __global__ void gemm() { /* v2 */ }\n~~~\n" ..
    "Plan:\n```lua\nreturn { launches = {} }\n```\nand some python:\n```python\nprint(1)\n```\n"
  local c = assert(extract.candidate(text))
  t.eq(c.lang, "cuda")
  t.match(c.code, "v2", "the last block that defines a kernel")
  t.eq(c.plan, "return { launches = {} }\n")
  t.match(assert(extract.candidate(text, { pick = "first" })).code, "v1")
  local p = assert(extract.candidate("```ptx\n.version 8.0\n.target sm_90a\n.visible .entry k() { ret; }\n```"))
  t.eq(p.lang, "ptx")
  local u = assert(extract.candidate("```\n.version 8.0\n.target sm_90a\n.entry k() { ret; }\n```"))
  t.eq(u.lang, "ptx", "an untagged block is recognised by its text")
  t.eq(assert(extract.candidate("````c++\nextern \"C\" __global__ void k() {}\n````")).lang, "cuda")
end

T.extract_errors_say_why = function(t)
  local _, why = extract.candidate("no code at all")
  t.match(why, "no fenced code block")
  _, why = extract.candidate("")
  t.match(why, "empty")
  _, why = extract.candidate("```python\nprint(1)\n```")
  t.match(why, "found: python")
  _, why = extract.candidate("```cuda\n__device__ int f() { return 1; }\n```")
  t.match(why, "no code block defines a kernel")
  _, why = extract.candidate("```cuda\nextern \"C\" __global__ void k() {\n  int x;")
  t.match(why, "cut off")
  local v = extract.verdict("no fenced code block")
  t.eq(v.verdict, "extraction_error")
  t.eq(v.reason, "no fenced code block")
end

-- A study's language takes its own block: Triton's ```python (an
-- @triton.jit function), CuTe's ```cuda that includes CuTe's headers.
T.extract_takes_the_languages_block = function(t)
  local languages = require "klab.experiment.languages"
  local py = "```python\nimport triton\n@triton.jit\ndef k(X):\n    pass\n```\n"
  local cu = "```cuda\nextern \"C\" __global__ void k() {}\n```\n"
  local plan = "```lua\nreturn { launches = {} }\n```\n"
  local both = cu .. py .. plan
  local tr = assert(languages.candidate(both, "triton"))
  t.eq(tr.lang, "triton") t.match(tr.code, "@triton%.jit") t.eq(tr.plan, "return { launches = {} }\n")
  local c = assert(languages.candidate(both, "cuda"))
  t.eq(c.lang, "cuda") t.match(c.code, "__global__")
  t.eq(assert(extract.candidate(both)).lang, "cuda", "no language: CUDA C++ or PTX, as always")
  local untagged = assert(languages.candidate("```\n@triton.jit\ndef k(X):\n    pass\n```", "triton"))
  t.eq(untagged.lang, "triton", "an untagged block is recognised by @triton.jit")
  local _, why = languages.candidate(cu, "triton")
  t.match(why, "%(found: cuda%); put the kernel in a ```python block")
  _, why = languages.candidate("```python\nprint(1)\n```", "triton")
  t.match(why, "no code block defines a kernel %(a @triton%.jit function")
  _, why = extract.candidate(py)
  t.match(why, "found: python", "a Triton block is no candidate where no language is named")
  -- CuTe: a CUDA C++ block that includes CuTe's or CUTLASS's headers.
  _, why = languages.candidate(cu, "cute")
  t.match(why, "includes no CuTe or CUTLASS header")
  _, why = languages.candidate("no code", "cute")
  t.match(why, "put the kernel in a ```cuda block$", "CuTe is no PTX")
  local cute = assert(languages.candidate("```cuda\n#include <cute/tensor.hpp>\n" .. cu:sub(9), "cute"))
  t.eq(cute.lang, "cuda") t.match(cute.code, "cute/tensor")
  _, why = languages.candidate("```ptx\n.version 8.0\n.target sm_90a\n.visible .entry k() { ret; }\n```", "cute")
  t.match(why, "found: ptx")
end

-- ---- prompts ------------------------------------------------------------------------

T.prompt_templates_and_packs = function(t)
  t.eq(prompt.render("a ${x} $${x} ${y.z}", { x = 1, ["y.z"] = "q" }), "a 1 ${x} q")
  t.raises(function() prompt.render("a ${nope}", { x = 1 }, "t.md") end, "unknown variable %${nope} in t.md")
  local text, files = prompt.pack("hopper+warp_specialization")
  t.eq(#files, 2)
  t.match(text, "Hopper") t.match(text, "warp specialization")
  t.eq(select(2, prompt.pack("hopper-no-hint"))[1]:match("[^/]+$"), "hopper.md")
  t.eq(prompt.pack("none"), "")
  t.raises(function() prompt.pack("no_such_pack") end, "no_such_pack.md, which does not exist")
  local msgs = prompt.messages { group = { name = "g", workloads = { TASK } }, tag = "hopper", arch = "sm_90a" }
  t.eq(#msgs, 2) t.eq(msgs[1].role, "system")
  t.match(msgs[1].content, "sm_90a") t.match(msgs[1].content, "Hopper %(sm_90a%) notes")
  t.match(msgs[2].content, "M=123, N=457, K=789")
end

-- A prompt variant per language (prompts/languages/NAME.md): what to
-- write, in which block, the launch conventions; the default is CUDA C++,
-- whose messages are the ones studies had before languages were a condition.
T.prompt_has_a_variant_per_language = function(t)
  local g = { name = "g", workloads = { TASK } }
  local function system(language)
    return prompt.messages { group = g, tag = "none", language = language }[1].content
  end
  t.eq(system(nil), system("cuda"), "no language is cuda")
  t.match(system("cuda"), "in one ```cuda block %(CUDA C%+%+ compiled by NVRTC")
  local v = require("klab.experiment.languages").vars()
  local tr = system("triton")
  t.match(tr, "in one ```python block") t.match(tr, "@triton%.jit")
  t.match(tr, "Triton " .. v.triton_version:gsub("%.", "%%.") .. " compiles it to PTX for sm_90a")
  t.match(tr, "constexprs = {BLOCK = 1024}, num_warps = 4")
  t.ok(not tr:find("```cuda", 1, true), "the Triton variant asks for no CUDA block")
  local cute = system("cute")
  t.match(cute, "CUTLASS " .. v.cutlass_version:gsub("%.", "%%.")) t.match(cute, "#include <cute/tensor%.hpp>")
  t.raises(function() system("trition") end, "unknown language 'trition' %(did you mean 'triton'%?%)")
end

T.feedback_in_ptxbench_style = function(t)
  local turn = {
    verdict = "incorrect", turn = 3, targets = { "wgmma", "tma" },
    compile_log = "ptxas info    : Used 32 registers\nptxas warning : Potential Performance Loss: wgmma.mma_async serialized",
    workloads = {
      { axes = "M=128, N=4096, K=4096", verdict = "passed", speedup = 0.8123, time_ms = 0.1234, baseline_ms = 0.1002,
        instructions = { status = "not_executed", missing = { "wgmma" } }, profile = "sm__throughput 41%" },
      { axes = "M=16, N=7168, K=5120", verdict = "incorrect", reason = "incorrect: 12 of 100 elements differ",
        max_abs = 3.5, max_rel = 0.25 },
    },
  }
  local fb = prompt.feedback(turn, { turn = 3, profile = true, profile_after = 2 })
  t.match(fb, "%[M=128, N=4096, K=4096%] PASSED — speedup: 0%.812x %(kernel: 0%.1234 ms, ref: 0%.1002 ms%)")
  t.match(fb, "%[M=16, N=7168, K=5120%] INCORRECT_NUMERICAL — max_abs_error: 3%.5, max_rel_error: 0%.25")
  t.match(fb, "12 of 100 elements differ")
  t.match(fb, "Compiler log:\nptxas info")
  t.match(fb, "Potential Performance Loss")
  t.match(fb, "INSTRUCTION WARNING: the kernel might not be fully exercising the specialized hardware units%. "
    .. "Please try these instructions: wgmma")
  t.match(fb, "Profile %[M=128, N=4096, K=4096%]:\nsm__throughput 41%%")
  local early = prompt.feedback(turn, { turn = 2, profile = true, profile_after = 2 })
  turn.turn = 2
  early = prompt.feedback(turn, { profile = true, profile_after = 2 })
  t.ok(not early:find("Profile"), "no profile before turn profile_after + 1")
  t.ok(not prompt.feedback(turn, { compile_log = false }):find("Compiler log"), "the log can be left out")
  local x = prompt.feedback({ verdict = "extraction_error", reason = "extraction_error: no fenced code block" },
    { template = "feedback.md", turn = 1, turns = 8, target = 1.2 })
  t.match(x, "EXTRACTION_ERROR — no fenced code block")
  t.match(x, "turn 1 of 8") t.match(x, "at least 1%.20x")
  -- The warning follows the statuses the workload summary gives
  -- (klab.experiment.workloads: executed, not_executed, unknown) and no other.
  local function warns(status)
    local fb = prompt.feedback({ verdict = "passed", targets = { "wgmma" }, workloads = { { verdict = "passed",
      speedup = 1, time_ms = 1, baseline_ms = 1, instructions = { status = status, missing = { "wgmma" } } } } },
      { compile_log = false })
    return fb:find("INSTRUCTION WARNING", 1, true) ~= nil
  end
  t.ok(warns("not_executed"), "not_executed warns")
  for _, s in ipairs { "executed", "unknown", "absent" } do t.ok(not warns(s), s .. " does not warn") end
end

-- ---- policies, options, progress ------------------------------------------------------

T.policies_select = function(t)
  local E = {
    { turn = 1, verdict = "compile_error" },
    { turn = 2, verdict = "passed", speedup = 0.5, verified = false },
    { turn = 3, verdict = "passed", speedup = 0.9, verified = true },
    { turn = 4, verdict = "passed", speedup = 1.1, verified = false },
    { turn = 5, verdict = "incorrect" },
  }
  t.eq(policy.first_correct(E).turn, 2)
  t.eq(policy.fastest_correct(E).turn, 4)
  t.eq(policy.fastest_verified(E).turn, 3)
  local none, why = policy.fastest_correct { { verdict = "unknown" } }
  t.eq(none, nil) t.match(why, "no correct")
  -- paired gate: the fastest gate survivor fails the full set, the next passes
  local asked = {}
  local ctx = { evaluate = function(e, set)
    asked[#asked + 1] = e.turn .. set
    if e.turn == 4 then return { verdict = "incorrect", reason = "incorrect: on the odd shape" } end
    return { verdict = "passed", speedup = 0.85 }
  end }
  local g = policy.paired_gate { min_speedup = 0.6, top = 3 }
  t.eq(g.eval_set, "gate")
  local sel = g.select(E, ctx)
  t.eq(sel.turn, 3) t.eq(sel.speedup, 0.85) t.eq(sel.gate_speedup, 0.9)
  t.eq(table.concat(asked, ","), "4full,3full", "fastest first; turn 2 is under the gate's minimum")
  local _, why2 = policy.paired_gate { min_speedup = 5 }.select(E, ctx)
  t.match(why2, "no turn passed the gate at 5x")
  t.eq(policy.resolve(function(es) return es[1] end).name, "user")
  t.raises(function() policy.resolve("fastest") end, "unknown policy 'fastest'")
end

T.options_parse_by_type = function(t)
  local o = experiment.options({ n = 4, x = 1.5, s = "a", b = false, l = { "p" } },
    { "n=8", "x=2.25", "s=hello", "b=true", "l=q,r" })
  t.eq(o.n, 8) t.eq(math.type(o.n), "integer") t.eq(o.x, 2.25) t.eq(o.s, "hello") t.eq(o.b, true)
  t.eq(#o.l, 2) t.eq(o.l[2], "r")
  t.raises(function() experiment.options({ n = 1 }, { "m=2" }) end, "unknown option 'm' %(known: n%)")
  t.raises(function() experiment.options({ n = 1 }, { "n=x" }) end, "needs a number")
  t.raises(function() experiment.options({ n = 1 }, { "n=1.5" }) end, "needs an integer")
end

T.progress_plain_lines = function(t)
  local path = t.tmpdir() .. "/p.txt"
  local f = assert(io.open(path, "w"))
  local p = progress.new { total = 10, label = "turns", out = f, mode = "plain", interval = 0 }
  p:update { done = 0 }
  p:update { done = 4, counts = { passed = 3, compile_error = 1 } }
  p:update { done = 10, total = 10, counts = { passed = 9, compile_error = 1 } }
  p:finish()
  f:close()
  local text = read(path)
  t.match(text, "turns 4/10  compile_error=1 passed=3  elapsed %d+s, left ~%d+s")
  t.match(text, "turns 10/10  compile_error=1 passed=9  elapsed")
  t.ok(not text:find("\27"), "no terminal control codes when not on a terminal")
  -- the bar (what a terminal gets): redrawn in place, filled in proportion
  local bpath = t.tmpdir() .. "/b.txt"
  local bf = assert(io.open(bpath, "w"))
  local b = progress.new { total = 4, label = "turns", out = bf, mode = "bar", width = 8 }
  b:update { done = 2, counts = { unknown = 2 }, force = true }
  b:finish()
  bf:close()
  local btext = read(bpath)
  t.match(btext, "\r\27%[K%[####%.%.%.%.%] turns 2/4  unknown=2")
  t.ok(select(2, btext:gsub("\n", "")) == 1, "one line, ended once at the finish")
  local auto = progress.new { total = 1, out = bf }
  t.eq(auto.mode, "plain", "a file is not a terminal")
end

-- ---- sweeps against the server ---------------------------------------------------------

-- Two models (OpenAI and Anthropic wire formats) x 2 tags x 2 replicas x 3
-- turns, two requests in flight per model, with every fault in the script.
T.sweep_with_every_fault_then_replay = function(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local db <close> = assert(store.open(dir .. "/sweep.db"))
    local faults = {
      { delay = 0.3, reply = NAIVE }, { status = 429, retry_after = 1 }, { reply = BROKEN }, { status = 500 },
      { reply = NOCODE }, { drop = true }, { reply = NAIVE }, { malformed = true }, { truncated = true },
      { delay = 0.2, reply = NAIVE }, { reply = BROKEN }, { reply = NOCODE },
    }
    s:script(faults)
    local spec = {
      name = "faults", db = db, models = { oa_model(s), an_model(s) }, tasks = { TASK }, tags = { "none", "hopper" },
      replicas = 2, turns = 3, target_speedup = 1.2, progress = false, log = dir .. "/sweep.log",
      -- Every turn judged (as far as this machine can): the repair turns are what is tested.
      phase = "full",
    }
    local exp = experiment.new(spec)
    local sum = exp:run()
    t.eq(sum.trajectories, 8) t.eq(sum.turns, 24) t.eq(sum.new_turns, 24)
    local by = turns_of(db, "faults")
    local n = 0
    for k, list in pairs(by) do
      n = n + 1
      t.eq(#list, 3, k .. " has every turn")
      for i, r in ipairs(list) do t.eq(r.turn, i, k .. " turns in order, none twice") end
    end
    t.eq(n, 8)
    local c = sum.counts
    t.ok((c.request_error or 0) >= 1, "the malformed body is a failed turn")
    t.ok((c.extraction_error or 0) >= 2, "replies without code")
    t.ok((c.compile_error or 0) >= 2, "broken code")
    -- Good code is evaluated for real on a GPU; without one its GPU stages
    -- are skipped (unknown).
    local evaluated = (c.unknown or 0) + (c.passed or 0) + (c.target_not_executed or 0) + (c.incorrect or 0)
    t.ok(evaluated >= 2, "good code reached the GPU stages (or was told they were skipped)")
    t.ok((c.plan_error or 0) >= 1, "the server's default kernel is not the task's")
    local log = s:log()
    local seen = {}
    for _, e in ipairs(log) do for k in pairs(e.action) do seen[k] = true end end
    for _, k in ipairs { "delay", "status", "drop", "malformed", "truncated", "reply" } do
      t.ok(seen[k], "the server applied a " .. k .. " action")
    end
    local paths = {}
    for _, e in ipairs(log) do paths[e.path] = true end
    t.ok(paths["/v1/chat/completions"] and paths["/v1/messages"], "both wire formats were used")
    -- every network attempt is recorded with its response
    local attempts, failed_rows = 0, 0
    for _, r in ipairs(db:query("SELECT response, error FROM responses")) do
      attempts = attempts + #cjson.decode(r.response).attempts
      if r.error then failed_rows = failed_rows + 1 end
    end
    t.ok(attempts >= 24 + 3 and attempts <= #log, ("%d attempts recorded, %d requests served"):format(attempts, #log))
    t.ok(failed_rows >= 1)
    local mal = db:first("SELECT reason FROM turns WHERE verdict = 'request_error'")
    t.match(mal.reason, "malformed JSON")
    -- a turn's feedback reaches the next request of its trajectory
    local fb = db:first("SELECT feedback FROM turns WHERE verdict = 'compile_error'")
    t.match(fb.feedback, "COMPILE_ERROR")
    local found = false
    for _, e in ipairs(log) do
      if e.body:find("COMPILE_ERROR", 1, true) then found = true end
    end
    t.ok(found, "feedback was sent back to the model")
    local table_live = exp:table()
    t.match(table_live, "verdicts per turn")
    exp:close()

    -- Replay: the same sweep under another name, from the store only.
    local served = #log
    local no_net = { submit = function() error("the network was used in replay mode") end }
    spec.name, spec.mode, spec.http = "faults_replay", "replay", no_net
    local rexp = experiment.new(spec)
    local rsum = rexp:run()
    t.eq(rsum.turns, 24) t.eq(rsum.requests.network, 0) t.eq(rsum.requests.cache, 24)
    t.eq(#s:log(), served, "replay sent nothing")
    local live, rep = turns_of(db, "faults"), turns_of(db, "faults_replay")
    for k, list in pairs(live) do
      for i, r in ipairs(list) do
        t.eq(rep[k][i].verdict, r.verdict, k .. " turn " .. i .. " verdict")
        t.eq(rep[k][i].candidate, r.candidate, k .. " turn " .. i .. " candidate")
        t.eq(rep[k][i].reason, r.reason, k .. " turn " .. i .. " reason")
      end
    end
    t.eq(rexp:table(), table_live, "the replayed table is the live one")
    -- a replay with a request that was never made names it
    spec.name, spec.turns = "faults_replay_more", 4
    local more = experiment.new(spec)
    local ok, err = pcall(more.run, more)
    t.eq(ok, false)
    t.match(tostring(err), "^replay: no stored response for task gemm_bf16/123x457x789, tag %w+, replica 1, turn %d of model %w+ "
      .. "%(experiment faults_replay_more%)")
    t.ok(not tostring(err):find("traceback", 1, true), "one line, no traceback")
  end)
end

T.interrupted_sweep_resumes_without_lost_or_repeated_work = function(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local db <close> = assert(store.open(dir .. "/resume.db"))
    local replies = {}
    for i = 1, 30 do replies[i] = { delay = 0.05, reply = (i % 3 == 0) and BROKEN or NAIVE } end
    s:script(replies)
    local stored = 0
    local spec = {
      name = "resume", db = db, models = { oa_model(s, { concurrency = 3 }) }, tasks = { TASK },
      tags = { "none", "hopper" }, replicas = 2, turns = 3, progress = false, phase = "full",
      on_turn = function()
        stored = stored + 1
        if stored == 5 then error("simulated interruption after 5 turns") end
      end,
    }
    local ok, err = pcall(function() experiment.new(spec):run() end)
    t.eq(ok, false) t.match(tostring(err), "simulated interruption")
    local count = db:first("SELECT count(*) AS n FROM turns").n
    t.eq(count, 5, "the five finished turns are stored")
    local asked = #s:log()
    t.ok(asked >= 5, "requests were in flight")
    spec.on_turn = nil
    local sum = experiment.new(spec):run()
    t.eq(sum.turns, 12) t.eq(sum.new_turns, 7, "only the missing turns ran")
    for k, list in pairs(turns_of(db, "resume")) do
      t.eq(#list, 3, k)
      for i, r in ipairs(list) do t.eq(r.turn, i, k .. ": no turn lost or repeated") end
    end
    t.eq(db:first("SELECT count(*) AS n FROM trajectories WHERE state = 'done'").n, 4)
    t.eq(#s:log(), 12, "every request was sent exactly once (answers in flight at the interruption were kept)")
    -- a third run does nothing
    local again = experiment.new(spec):run()
    t.eq(again.new_turns, 0) t.eq(#s:log(), 12)
  end)
end

T.early_stop_and_best_of_n = function(t)
  -- No GPU: use a policy and a stop rule on stored verdicts. target = 0
  -- stops at the first correct turn; without a GPU nothing passes, so every
  -- trajectory runs its turns; select over groups works on what is stored.
  with_server(t, function(s)
    local dir = t.tmpdir()
    local db <close> = assert(store.open(dir .. "/bon.db"))
    s:script { { reply = NAIVE }, { reply = NOCODE }, { reply = BROKEN } }
    local exp = experiment.new { name = "bon", db = db, models = { oa_model(s, { concurrency = 1 }) }, tasks = { TASK },
      replicas = 3, turns = 1, progress = false, select = "first_correct" }
    local sum = exp:run()
    t.eq(sum.turns, 3)
    -- The naive reply is unknown without a GPU and correct (not verified)
    -- with one; the other two replies fail before any GPU stage.
    local naive_verdict = require("klab.gpu").available() and "target_not_executed" or "unknown"
    local rows = exp:select(function(entries)
      t.eq(#entries, 3, "the group holds every replica's turn")
      for _, e in ipairs(entries) do if e.verdict == naive_verdict then return e end end
    end)
    t.eq(#rows, 1) t.eq(rows[1].n, 3) t.eq(rows[1].verdict, naive_verdict)
    if naive_verdict == "unknown" then
      local none = exp:select("fastest_correct")
      t.eq(none[1].turn, nil) t.match(none[1].why, "no correct")
    end
  end)
end

-- The GPU stages are faked by a session whose verdicts depend on the code:
-- "FAST" passes at 1.5x with the target instructions executed, "SLOW" passes
-- at 0.7x without them. This drives early stop, the feedback of passed
-- turns, verification and the paired gate without a GPU. langs, when
-- given, gets each evaluated candidate's language.
local function fake_session(calls, langs)
  local function evaluate(_, name, c, opts)
    calls[#calls + 1] = name
    if langs then langs[#langs + 1] = c.lang end
    local fast = c.code:find("FAST", 1, true) ~= nil
    return {
      verdict = "passed", reason = "passed: correct",
      stages = {
        build = { ok = true, log = "ptxas info    : Used 40 registers" },
        timing = { candidate = { median = fast and 100 or 214.3 }, baseline = { median = 150 }, speedup = fast and 1.5 or 0.7 },
        correctness = { outputs = { C = { max_abs = 0.001, max_rel = 0.002 } } },
        instructions = { status = "ok", verified = fast, text = "tensor pipe " .. (fast and "81%" or "0%"),
          families = { wgmma = { status = fast and "executed" or "not_executed" } } },
      },
    }
  end
  -- The session's queue: submit answers at once, wait hands the result over.
  local done, n = {}, 0
  return { evaluate = evaluate,
    submit = function(self, name, c, opts)
      n = n + 1
      done[n] = evaluate(self, name, c, opts)
      return n
    end,
    wait = function(_, ticket) local r = done[ticket] done[ticket] = nil return r end,
    close = function() end }
end

T.early_stop_verification_and_paired_gate = function(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local db <close> = assert(store.open(dir .. "/stop.db"))
    local slow = "```cuda\n// SLOW\n" .. NAIVE_CODE .. "```\n"
    local fast = "```cuda\n// FAST\n" .. NAIVE_CODE .. "```\n"
    s:script { { reply = slow }, { reply = fast }, { reply = slow }, { reply = fast } }
    local calls = {}
    local group = { name = "pair", workloads = { "gemm_bf16/123x457x789", "gemm_bf16/1000x1000x1000" } }
    local exp = experiment.new { name = "stop", db = db, models = { oa_model(s, { concurrency = 1 }) }, tasks = { group },
      turns = 5, target_speedup = 1.2, progress = false, select = "fastest_verified", session = fake_session(calls),
      feedback = { profile = true, profile_after = 1 } }
    local sum = exp:run()
    t.eq(sum.turns, 2, "stopped at the turn that met the target")
    local row = exp:rows()[1]
    t.eq(row.stop_reason, "target_met") t.eq(row.best_speedup, 1.5) t.eq(row.selected_turn, 2)
    local t1 = db:first("SELECT * FROM turns WHERE turn = 1")
    t.eq(t1.verdict, "passed") t.eq(t1.speedup, 0.7) t.eq(t1.verified, 0)
    t.match(t1.feedback, "%[M=123, N=457, K=789%] PASSED — speedup: 0%.700x %(kernel: 0%.2143 ms, ref: 0%.1500 ms%)")
    t.match(t1.feedback, "INSTRUCTION WARNING: .* wgmma")
    t.ok(not t1.feedback:find("Profile"), "no profile on turn 1 (profile_after = 1)")
    t.match(t1.feedback, "Target: a speedup of at least 1%.20x")
    local t2 = db:first("SELECT * FROM turns WHERE turn = 2")
    t.eq(t2.verified, 1) t.match(t2.feedback, "Profile %[M=123, N=457, K=789%]:\ntensor pipe 81%%")
    t.eq(#calls, 4, "two turns on two workloads")
    local log = s:log()
    t.eq(#log, 2)
    t.ok(log[2].body:find("INSTRUCTION WARNING", 1, true) ~= nil, "turn 1's feedback went to the model")

    -- paired gate: turns are evaluated on the gate only; the selection runs the full set
    calls = {}
    local gexp = experiment.new { name = "gate", db = db, models = { oa_model(s, { concurrency = 1 }) },
      -- another tag: the first turn's request differs from the first experiment's (which the cache would answer)
      tasks = { { name = "pair", workloads = group.workloads, gate = 1 } }, tags = { "hopper" }, turns = 2, progress = false,
      select = policy.paired_gate { min_speedup = 1.0 }, session = fake_session(calls) }
    gexp:run()
    t.eq(table.concat(calls, ","), "gemm_bf16/123x457x789,gemm_bf16/123x457x789," ..
      "gemm_bf16/123x457x789,gemm_bf16/1000x1000x1000", "gate, gate, then the full set for the survivor")
    local g = gexp:rows()[1]
    t.eq(g.selected_turn, 2) t.eq(g.selected_speedup, 1.5)
  end)
end

-- The two phases: where the models are, each trajectory's first turn is
-- asked, built and plan-checked, and stored awaiting judgement; only what
-- was judged there (a compile error) gets a repair turn. Where the GPUs
-- are, judging stores the verdicts and the feedback, and continue sends the
-- repair turns after them. (The judging machine is a stand-in session.)
T.two_phases_generate_then_judge_then_continue = function(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local path = dir .. "/two.db"
    local slow = "```cuda\n// SLOW\n" .. NAIVE_CODE .. "```\n"
    local fast = "```cuda\n// FAST\n" .. NAIVE_CODE .. "```\n"
    s:script { { reply = slow }, { reply = BROKEN }, { reply = fast }, { reply = fast } }
    local spec = { name = "two", db = path, models = { oa_model(s, { concurrency = 1 }) }, tasks = { TASK },
      replicas = 2, turns = 3, target_speedup = 1.2, progress = false, phase = "generate" }
    local exp <close> = experiment.new(spec)
    local sum = exp:run()
    t.eq(sum.phase, "generate")
    t.eq(#s:log(), 3, "one request per trajectory, and one repair turn after the compile error")
    t.eq(sum.new_turns, 3)
    t.eq(sum.awaiting, 2, "both trajectories await judgement")
    t.eq(sum.outcome, "done")
    local db <close> = assert(store.open(path))
    local rows = db:query("SELECT t.replica, u.turn, u.verdict, u.awaiting, u.feedback FROM turns u "
      .. "JOIN trajectories t ON t.id = u.trajectory_id ORDER BY t.replica, u.turn")
    t.eq(#rows, 3)
    t.eq(rows[1].verdict, "unknown") t.eq(rows[1].awaiting, 1) t.eq(rows[1].feedback, nil)
    t.eq(rows[2].verdict, "compile_error") t.eq(rows[2].awaiting, 0) t.match(rows[2].feedback, "COMPILE_ERROR")
    t.eq(rows[3].verdict, "unknown") t.eq(rows[3].awaiting, 1)
    -- Run again on the same machine: nothing more is asked of the model.
    local again <close> = experiment.new(spec)
    t.eq(again:run().new_turns, 0)
    t.eq(#s:log(), 3, "no turn is sent after a turn nobody judged")

    -- On the GPU machine: the stored experiment is rebuilt and judged.
    local calls = {}
    local judge <close> = experiment.from_store(db, "two", { session = fake_session(calls), progress = false })
    local r = judge:judge {}
    t.eq(r.judged, 2) t.eq(r.unjudged, 0) t.eq(r.awaiting, 0)
    t.eq(#calls, 2)
    local turns = db:query("SELECT t.replica, t.state, u.turn, u.verdict, u.speedup, u.awaiting, u.feedback FROM turns u "
      .. "JOIN trajectories t ON t.id = u.trajectory_id ORDER BY t.replica, u.turn")
    t.eq(turns[1].verdict, "passed") t.eq(turns[1].speedup, 0.7) t.eq(turns[1].awaiting, 0)
    t.match(turns[1].feedback, "PASSED — speedup: 0%.700x")
    t.eq(turns[1].state, "running", "0.7x: the trajectory goes on")
    t.eq(turns[3].verdict, "passed") t.eq(turns[3].speedup, 1.5)
    t.eq(turns[3].state, "done", "1.5x met the target")
    t.eq(#s:log(), 3, "judging asks no model")

    -- --continue: the repair turns, after the judged feedback, with the
    -- models, counts and mode the user gives (compared with the store's).
    local plain <close> = experiment.from_store(db, "two", { session = fake_session(calls), progress = false })
    t.raises(function() plain:judge { continue = true } end, "needs the models, turns, replicas and mode from the command line")
    local user = { models = { oa_model(s, { concurrency = 1 }) }, turns = 3, replicas = 2, mode = "record-missing" }
    local other = { models = { oa_model(s, { concurrency = 1, base_url = "https://elsewhere.example/v1" }) }, turns = 3,
      replicas = 2, mode = "record-missing" }
    t.raises(function() experiment.from_store(db, "two", { session = fake_session(calls), progress = false, user = other }) end,
      "model oa: base_url: the store says \"http://127%.0%.0%.1:%d+/v1\", the command line \"https://elsewhere%.example/v1\"")
    t.eq(#s:log(), 3, "nothing was asked")
    local cont <close> = experiment.from_store(db, "two", { session = fake_session(calls), progress = false, user = user })
    local c = cont:judge { continue = true }
    t.eq(c.judged, 0)
    t.eq(c.run.new_turns, 1)
    local log = s:log()
    t.eq(#log, 4)
    t.ok(log[4].body:find("PASSED — speedup: 0.700x", 1, true) ~= nil, "turn 2 was asked with turn 1's verdict")
    t.eq(db:first("SELECT state FROM trajectories WHERE replica = 1").state, "done")
  end)
end

-- The language is a condition of the sweep: languages = {"cuda", "triton"}
-- crossed with the models, tasks, tags and replicas. Each trajectory is
-- asked in its language's prompt, its reply's code is taken from that
-- language's block, and the store records the language of the trajectory
-- and of its candidate; klab judge finds them again, and klab report --by
-- language sets them side by side. The CUDA C++ trajectories of a study
-- made before it named languages are the same trajectories.
T.sweep_in_two_languages = function(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local path = dir .. "/lang.db"
    local triton_code = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef gemm(A, B, C, M, N, K):\n"
      .. "    pass\n"
    -- Every reply holds both: which one a turn takes is its language's doing.
    local reply = "```cuda\n" .. NAIVE_CODE .. "```\n\n```python\n" .. triton_code .. "```\n\n```lua\n" .. NAIVE_PLAN
      .. "```\n"
    s:script { { reply = reply }, { reply = reply } }
    local calls, seen = {}, {}
    local session = fake_session(calls, seen)
    local spec = { name = "langs", db = path, models = { oa_model(s, { concurrency = 1 }) }, tasks = { TASK },
      turns = 1, progress = false, session = session }
    local first <close> = experiment.new(spec)
    t.eq(first:run().new_turns, 1)
    local first_table = first:table()
    first:close()
    spec.languages = { "cuda", "triton" }
    local exp <close> = experiment.new(spec)
    local sum = exp:run()
    t.eq(sum.trajectories, 2)
    t.eq(sum.new_turns, 1, "the CUDA C++ trajectory was already there: only the Triton one is asked")
    local tbl = exp:table()
    -- PTXBench's cells and best-of-N: one per model, language and task.
    local cells = exp:cells()
    t.eq(#cells, 2)
    t.eq(cells[1].model .. "," .. cells[2].model, "oa / cuda,oa / triton")
    local best = exp:select("fastest_correct")
    t.eq(#best, 2)
    t.eq(best[1].language .. "," .. best[2].language, "cuda,triton")
    t.eq(best[1].n + best[2].n, 2)
    exp:close()
    local log = s:log()
    t.eq(#log, 2)
    t.ok(log[1].body:find("in one ```cuda block (CUDA C++", 1, true), "the CUDA C++ prompt")
    t.ok(not log[1].body:find("```python block", 1, true))
    t.ok(log[2].body:find("in one ```python block", 1, true), "the Triton prompt")
    t.ok(not log[2].body:find("in one ```cuda block", 1, true))
    t.eq(table.concat(seen, ","), "cuda,triton", "each evaluated as its language's candidate")
    t.match(tbl, "^task +model +tag +language +rep")
    t.match(tbl, "\n" .. TASK:gsub("%p", "%%%0") .. " +oa +none +cuda +1 ")
    t.match(tbl, "\n" .. TASK:gsub("%p", "%%%0") .. " +oa +none +triton +1 ")
    t.ok(not first_table:find("language", 1, true), "a study in cuda alone has the table it always had")
    local db <close> = assert(store.open(path))
    local rows = db:query([[SELECT t.language AS tl, u.language AS ul, c.language AS cl, c.code, t.messages
      FROM trajectories t JOIN turns u ON u.trajectory_id = t.id JOIN candidates c ON c.hash = u.candidate
      ORDER BY t.id]])
    t.eq(#rows, 2)
    t.eq(rows[1].tl, "cuda") t.eq(rows[1].ul, "cuda") t.eq(rows[1].cl, "cuda")
    t.match(rows[1].code, "__global__") t.ok(not rows[1].code:find("triton", 1, true))
    t.eq(rows[2].tl, "triton") t.eq(rows[2].ul, "triton") t.eq(rows[2].cl, "triton")
    t.match(rows[2].code, "^import triton") t.ok(not rows[2].code:find("__global__", 1, true))
    t.match(rows[2].messages, "```python block")
    -- The documented key (docs/experiments.md): a CUDA C++ trajectory of a
    -- store made before languages were a condition is found by it.
    t.eq(db:first("SELECT key FROM trajectories WHERE language = 'cuda'").key,
      store.hash("klab.trajectory.1", "langs", "oa", TASK, "none", "1"))
    t.ok(db:first("SELECT key FROM trajectories WHERE language = 'triton'").key
      ~= store.hash("klab.trajectory.1", "langs", "oa", TASK, "none", "1"))
    local config = cjson.decode(db:first("SELECT config FROM experiments WHERE name = 'langs'").config)
    t.eq(table.concat(config.languages, ","), "cuda,triton")
    t.ok(config.templates.languages.triton, "the Triton variant's hash is part of the condition")
    -- klab judge rebuilds the sweep from the store: both languages' turns.
    local again <close> = experiment.from_store(db, "langs", { session = fake_session(calls), progress = false })
    t.eq(again:judge { again = true }.judged, 2)
    -- A row per language in the report.
    local sq = require("klab.command").shell_quote
    local code, _, err = t.sh(sq(t.klab) .. " report " .. sq(path) .. " --by language --out " .. sq(dir .. "/report"))
    t.eq(code, 0, err)
    local cost = t.read(dir .. "/report/tables/cost.md") or ""
    t.match(cost, "Condition \\%(language\\%)")
    t.match(cost, "| cuda | 1 |") t.match(cost, "| triton | 1 |")
    code, _, err = t.sh(sq(t.klab) .. " report " .. sq(path) .. " --by languages --out " .. sq(dir .. "/bad"))
    t.eq(code, 2)
    t.match(err, "did you mean 'language'%?")
    -- --help says so, from the list the report checks names against.
    local _, help = t.sh(sq(t.klab) .. " report --help")
    for _, var in ipairs(require("klab.report.conditions").BUILTIN) do t.match(help, var, "--help names " .. var) end
    t.match(help, "language %(the language\n +a study asked the trajectory's kernels in: cuda, cute,\n +triton%)")
  end)
end

-- Replies in files (responses_dir): a language other than cuda has a
-- folder of its own under the tag's, so each language's turn reads its own.
T.reply_files_per_language = function(t)
  local dir = t.tmpdir()
  local function put(path, text)
    assert(os.execute("mkdir -p '" .. path:match("^(.*)/[^/]+$") .. "'"))
    local f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
  end
  local base = dir .. "/replies/oa/" .. TASK .. "/none/"
  put(base .. "r1/turn1.md", "```cuda\n" .. NAIVE_CODE .. "```\n")
  put(base .. "triton/r1/turn1.md", "```python\nimport triton\n@triton.jit\ndef gemm(A):\n    pass\n```\n")
  -- A CuTe turn whose code includes no CuTe header: no candidate.
  put(base .. "cute/r1/turn1.md", "```cuda\n" .. NAIVE_CODE .. "```\n")
  local calls, seen = {}, {}
  local session = fake_session(calls, seen)
  local no_net = { submit = function() error("the network was used in replay mode") end }
  local exp <close> = experiment.new { name = "files", db = dir .. "/files.db", models = { { name = "oa",
    provider = "openai", model = "m", base_url = "http://127.0.0.1:9/v1" } }, tasks = { TASK },
    languages = { "cuda", "triton", "cute" }, mode = "replay", responses_dir = dir .. "/replies", http = no_net,
    session = session, progress = false }
  local sum = exp:run()
  t.eq(sum.requests.files, 3)
  t.eq(table.concat(seen, ","), "cuda,triton")
  t.match(exp.db:first("SELECT u.reason FROM turns u JOIN trajectories t ON t.id = u.trajectory_id "
    .. "WHERE t.language = 'cute'").reason, "includes no CuTe or CUTLASS header")
  -- Best-of-N groups by the trajectory's language (the CuTe turn has no
  -- candidate, so no candidate language).
  local got = {}
  for _, r in ipairs(exp:select("first_correct")) do got[#got + 1] = tostring(r.language) end
  table.sort(got)
  t.eq(table.concat(got, ","), "cuda,cute,triton")
  -- A missing reply names the language of the turn that lacks it.
  local more <close> = experiment.new { name = "files_more", db = dir .. "/files.db", models = { { name = "oa",
    provider = "openai", model = "m", base_url = "http://127.0.0.1:9/v1" } }, tasks = { TASK }, tags = { "hopper" },
    languages = { "triton" }, mode = "replay", responses_dir = dir .. "/replies", http = no_net,
    session = fake_session(calls), progress = false }
  local ok, err = pcall(more.run, more)
  t.eq(ok, false)
  t.match(tostring(err), "tag hopper, language triton, replica 1, turn 1 of model oa .* no file .*/hopper/triton/r1/turn1%.md;")
end

-- Without a GPU, phase auto is the generate phase, and klab judge says it
-- cannot judge there (exit 3), leaving the turns awaiting.
T.auto_phase_and_judge_without_a_gpu = function(t)
  if require("klab.gpu").available() then t.skip("a GPU is present: the GPU check judges for real") end
  with_server(t, function(s)
    local dir = t.tmpdir()
    local path = dir .. "/auto.db"
    s:script { { reply = NAIVE }, { reply = NAIVE } }
    local exp <close> = experiment.new { name = "auto", db = path, models = { oa_model(s, { concurrency = 1 }) },
      tasks = { TASK }, replicas = 2, turns = 3, progress = false }
    local sum = exp:run()
    t.eq(sum.phase, "generate")
    t.eq(#s:log(), 2)
    exp:close()
    local code, out, err = t.sh(("'%s' judge %s"):format(t.klab, require("klab.command").shell_quote(path)))
    t.eq(code, 3, out .. err)
    t.match(err, "klab judge: nothing could be judged here: .*GPU stages skipped")
    local db <close> = assert(store.open(path))
    t.eq(db:first("SELECT count(*) AS n FROM turns WHERE awaiting = 1").n, 2, "the turns wait on")
    code, out, err = t.sh(("'%s' judge %s --experiment aut"):format(t.klab, require("klab.command").shell_quote(path)))
    t.eq(code, 2)
    t.match(err, "holds no experiment named aut %(did you mean 'auto'%?%)")
  end)
end

-- Mistakes in a spec are found before anything is written: one line naming
-- the script and the mistake, with did-you-mean; no store is made.
T.spec_mistakes_before_anything_is_written = function(t)
  local dir = t.tmpdir()
  local base = { name = "m", models = { { provider = "openai", model = "x", base_url = "http://127.0.0.1:9/v1" } },
    tasks = { TASK } }
  local function try(extra, pattern)
    local spec = { db = dir .. "/m.db" }
    for k, v in pairs(base) do spec[k] = v end
    for k, v in pairs(extra) do spec[k] = v end
    local ok, err = pcall(experiment.new, spec)
    t.eq(ok, false)
    t.ok(require("klab.errors").is(err, "mistake"), "a mistake: " .. tostring(err))
    t.match(tostring(err), pattern)
    t.ok(not tostring(err):find("\n"), "one line")
    t.ok(not io.open(dir .. "/m.db"), "no store was made")
  end
  try({ replicass = 2 }, "experiment_test%.lua:%d+: experiment m: unknown field 'replicass' %(did you mean 'replicas'%?%)")
  try({ turnz = 3 }, "unknown field 'turnz' %(did you mean 'turns'%?%)")
  try({ promt = {} }, "unknown field 'promt' %(did you mean 'prompt'%?%)")
  try({ tags = { "nosuchtag" } }, "tag nosuchtag: .*knowledge pack .*nosuchtag%.md")
  try({ mode = "bogus" }, "mode must be one of live, record%-missing, replay, got 'bogus'")
  try({ select = "fastest_corect" }, "unknown policy 'fastest_corect'.*%(did you mean 'fastest_correct'%?%)")
  try({ prompt = { user = "nosuch.md" } }, "no template nosuch%.md")
  try({ models = { { provider = "openia", model = "x" } } }, "did you mean 'openai'")
  try({ replicas = 0 }, "replicas must be a whole number of at least 1")
  try({ phase = "judge" }, "phase must be generate, full or auto")
  try({ languages = { "cuda", "trito" } }, "unknown language 'trito' %(did you mean 'triton'%?%) %(known: cuda, cute, triton%)")
  try({ languages = { "cuda", "cuda" } }, "language 'cuda' is named twice")
  try({ languages = {} }, "languages must be a non%-empty list")
  -- A system template of one's own that does not say which language to
  -- write gives the languages one prompt: no condition, a mistake.
  local own = dir .. "/own_system.md"
  local f = assert(io.open(own, "w"))
  f:write("You write GPU kernels for ${arch}.\n")
  f:close()
  try({ languages = { "cuda", "triton" }, prompt = { system = own } },
    "languages cuda and triton get the same prompt: the system or user template must include %${language_rules}")
end

-- A sweep that hits errors runs in a child process with a fake key in its
-- environment; afterwards the key is nowhere in the store files, the log or
-- anything the child printed, while the server saw it (as a hash).
T.api_key_never_reaches_store_or_logs = function(t)
  with_server(t, function(s)
    local dir = t.tmpdir()
    local key = "sk-test-" .. string.format("%08x%08x", math.random(0, 0x7fffffff), os.time())
    s:script { { status = 500 }, { status = 500 }, { status = 500 }, { malformed = true }, { status = 429, retry_after = 1 },
      { reply = NOCODE }, { truncated = true }, { reply = BROKEN }, { status = 401 } }
    local script = dir .. "/child.lua"
    local f = assert(io.open(script, "w"))
    f:write([[
local experiment = require "klab.experiment"
local port = assert(os.getenv("KLAB_TEST_PORT"))
local base = "http://127.0.0.1:" .. port
local retry = { attempts = 3, base = 0.05, max = 0.2 }
local exp = experiment.new {
  name = "secret", db = arg[1] .. "/secret.db", log = arg[1] .. "/secret.log", progress = "plain",
  models = {
    { name = "oa", provider = "openai", model = "m", base_url = base .. "/v1", api_key_env = "KLAB_TEST_KEY", retry = retry, concurrency = 1 },
    { name = "an", provider = "anthropic", model = "m", base_url = base, api_key_env = "KLAB_TEST_KEY", retry = retry, concurrency = 1 },
  },
  tasks = { "]] .. TASK .. [[" }, replicas = 1, turns = 3,
}
local sum = exp:run()
print(exp:table())
for _, r in ipairs(exp.db:query("SELECT error FROM responses WHERE error IS NOT NULL")) do print("error: " .. r.error) end
print("failed requests: " .. sum.requests.failed)
]])
    f:close()
    local code, out, errout = t.sh(("cd '%s' && KLAB_TEST_KEY='%s' KLAB_TEST_PORT=%d '%s' '%s' '%s'"):format(t.root, key, s.port,
      t.klab, script, dir))
    t.eq(code, 0, "the child sweep ran: " .. errout)
    t.match(out, "failed requests: [1-9]", "the sweep hit errors")
    t.match(out, "error: malformed JSON") t.match(out, "error: HTTP %d%d%d")
    local log = s:log()
    local sent = 0
    local want = (select(2, t.sh("printf %s '" .. key .. "' | sha256sum")) or ""):match("^(%x+)")
    for _, e in ipairs(log) do
      local h = e.secrets.authorization or e.secrets["x-api-key"]
      if h == want then sent = sent + 1 end
    end
    t.eq(sent, #log, "every request carried the key (the test is not vacuous)")
    local blobs = { out, errout, read(dir .. "/secret.log") }
    for _, suffix in ipairs { "", "-wal", "-shm" } do blobs[#blobs + 1] = read(dir .. "/secret.db" .. suffix) end
    t.ok(#blobs[4] + #blobs[5] > 0, "the store was written")
    t.ok(#blobs[3] > 0, "the log was written")
    for i, b in ipairs(blobs) do
      t.ok(not b:find(key, 1, true), "the key is absent from output " .. i)
      t.ok(not b:find(key:sub(9), 1, true), "no part of the key in output " .. i)
    end
    -- Also the database as SQLite sees it (pages may be compressed nowhere, but be explicit).
    local db <close> = assert(store.open(dir .. "/secret.db", { readonly = true }))
    for _, tbl in ipairs { "responses", "turns", "trajectories", "experiments" } do
      for _, row in ipairs(db:query("SELECT * FROM " .. tbl)) do
        for _, v in pairs(row) do t.ok(not tostring(v):find(key, 1, true), "the key is absent from " .. tbl) end
      end
    end
  end)
end

return T
