-- tests/lua/mutate_test.lua: klab mutate (mutants of a passing candidate)
-- and klab mutate --score (the mutation score), without a GPU.
--
-- Compiles use a temporary cache (cache_dir, or KLAB_CACHE_DIR for the
-- command line) so the user's cache is never touched.
local mutate = require "klab.mutate"
local score = require "klab.mutate.score"
local candidate = require "klab.eval.candidate"
local json = require "klab.json"
local jit = require "klab.jit"
local sh_quote = require("klab.command").shell_quote

local T = {}

local function need_nvrtc(t)
  local v = jit.versions()
  if not v.nvrtc.ok then t.skip("NVRTC not found: " .. tostring(v.nvrtc.error)) end
end

-- Shipped samples of several task families: {task, folder, max per family}.
local SAMPLES = {
  { "gemm_bf16/1000x1000x1000", "tasks/gemm/samples/wgmma_tma", 3 },
  { "gemm_bf16/1000x1000x1000", "tasks/gemm/samples/mma_sync", 3 },
  { "gemm_bf16/1000x1000x1000", "tasks/gemm/samples/naive" },
  { "softmax_bf16/1000x1023", "tasks/softmax/samples/naive" },
  { "layernorm_bf16/1001x1000", "tasks/norm/samples/naive" },
  { "sum_last_f32/999x1021", "tasks/reduce/samples/naive_sum_last" },
  { "gelu_tanh_bf16/16384x16384", "tasks/activation/samples/naive_gelu_tanh" },
}

-- A compile that never runs a compiler: every text its own binary.
local function fake_compile(c) return require("klab.store").hash("fake", c.code) end

local function klab(t, args, env)
  return t.sh((env or "") .. " " .. sh_quote(t.klab) .. " " .. args)
end

function T.every_family_has_mutants_and_every_written_mutant_compiles(t)
  need_nvrtc(t)
  local cache = t.tmpdir()
  local seen = {}
  for _, s in ipairs(SAMPLES) do
    local c = assert(candidate.load(t.root .. "/" .. s[2]))
    local made = assert(mutate.make(c, { max = s[3], arch = "sm_90a", cache_dir = cache }))
    local dir = t.tmpdir() .. "/out"
    t.ok(mutate.write(dir, s[1], c, made, { arch = "sm_90a", seed = "0x1", max = s[3] }), s[2])
    local fams = {}
    for _, m in ipairs(made.mutants) do
      seen[m.family] = true
      fams[m.family] = true
      t.ok(m.code ~= c.code, m.id .. " differs from the original")
      t.ok(m.original ~= m.mutated, m.id .. " shows a change")
      -- The written mutant compiles (the compile cache answers for what make compiled).
      local r, err = jit.compile_file(dir .. "/" .. m.id .. "/kernel.cu", { arch = "sm_90a", lineinfo = false,
        cache_dir = cache })
      t.ok(r ~= nil, s[2] .. " " .. m.id .. " compiles: " .. tostring(err))
      t.eq(t.read(dir .. "/" .. m.id .. "/plan.lua"), c.plan, m.id .. " keeps the plan")
    end
    local n = 0
    for _ in pairs(fams) do n = n + 1 end
    t.ok(n >= 3, s[2] .. ": mutants of at least 3 families, got " .. n)
    if s[3] then
      local per = {}
      for _, m in ipairs(made.mutants) do per[m.family] = (per[m.family] or 0) + 1 end
      for f, k in pairs(per) do t.ok(k <= s[3], s[2] .. " " .. f .. " within --max") end
    end
  end
  for _, f in ipairs(mutate.FAMILIES) do t.ok(seen[f], "some sample has a " .. f .. " mutant") end
end

function T.mutants_are_deterministic(t)
  local c = assert(candidate.load(t.root .. "/tasks/gemm/samples/mma_sync"))
  local function list(max)
    local made = assert(mutate.make(c, { compile = fake_compile, max = max }))
    local out = {}
    for _, m in ipairs(made.mutants) do out[#out + 1] = m.id .. "\0" .. m.operator .. "\0" .. m.line .. "\0" .. m.code end
    return out
  end
  local a, b = list(), list()
  t.ok(#a > 20, "mma_sync has mutants (" .. #a .. ")")
  t.eq(table.concat(a, "\1"), table.concat(b, "\1"), "the same mutants, ids and order twice")
  local ca, cb = list(2), list(2)
  t.eq(table.concat(ca, "\1"), table.concat(cb, "\1"), "--max picks the same mutants twice")
  t.ok(#ca < #a and #ca <= 2 * #mutate.FAMILIES, "--max caps each family")
  -- no two mutants are the same text
  local seen = {}
  for _, x in ipairs(a) do
    local code = x:match("[^\0]*\0[^\0]*\0[^\0]*\0(.*)")
    t.ok(not seen[code], "a mutant once")
    seen[code] = true
  end
end

function T.comments_strings_and_preprocessor_lines_are_never_mutated(t)
  local cuda = require "klab.mutate.cuda"
  local body = "if (i < n) p[i] = 0.5f * p[i]; __syncthreads();"
  local hidden = "#define E 1e-5f\n// " .. body .. "\n/* " .. body .. " */\n"
    .. 'extern "C" __global__ void k(float *p, unsigned n) { unsigned i = threadIdx.x; const char *s = "'
    .. body .. '"; }\n'
  t.eq(#cuda.sites(hidden), 0, "nothing to mutate outside comments, strings and #define")
  -- the same statements as code are mutated (the check above can fail)
  local shown = 'extern "C" __global__ void k(float *p, unsigned n) { unsigned i = threadIdx.x; ' .. body .. " }\n"
  local fams = {}
  for _, s in ipairs(cuda.sites(shown)) do fams[s.family] = true end
  t.ok(fams.bounds and fams.constants and fams.synchronisation, "bounds, constants, synchronisation as code")
end

function T.ptx_operators(t)
  local ptx = require "klab.mutate.ptx"
  local text = table.concat({
    ".version 8.0", ".target sm_80", ".address_size 64",
    ".visible .entry k(.param .u64 p)", "{", "  .reg .pred %p<2>;", "  .reg .b32 %r<4>;", "  .reg .f32 %f<4>;",
    "  // bar.sync 0; in a comment", "  mov.u32 %r1, %tid.x;", "  shl.b32 %r2, %r1, 2;",
    "  setp.lt.u32 %p1, %r1, 32;", "  div.rn.f32 %f1, %f2, %f3;", "  mul.f32 %f1, %f1, 0f3F000000;",
    "  bar.sync 0;", "DONE:", "  ret;", "}", "" }, "\n")
  local ops = {}
  for _, s in ipairs(ptx.sites(text)) do
    ops[s.family .. ": " .. s.operator] = (ops[s.family .. ": " .. s.operator] or 0) + 1
  end
  t.eq(ops["synchronisation: barrier removed"], 1, "bar.sync removed (not the one in the comment)")
  t.eq(ops["bounds: setp bound off by one"], 1)
  t.eq(ops["precision: fast-math instruction"], 1)
  t.eq(ops["constants: scale changed"], 1)
  t.eq(ops["constants: shift count changed"], 1)
  local made = assert(mutate.make({ lang = "ptx", code = text, name = "k.ptx" }, { compile = fake_compile }))
  local by = {}
  for _, m in ipairs(made.mutants) do by[m.family .. ": " .. m.mutated:gsub("^%s+", "")] = true end
  t.ok(by["bounds: setp.le.u32 %p1, %r1, 32;"], "setp.lt -> setp.le")
  t.ok(by["precision: div.approx.f32 %f1, %f2, %f3;"], "div.rn -> div.approx")
  t.ok(by["constants: mul.f32 %f1, %f1, 0f3F066666;"], "0.5 -> 0.525")
  t.ok(by["constants: shl.b32 %r2, %r1, 3;"], "shift 2 -> 3")
  t.eq(table.concat(made.families, ","), "precision,bounds,constants,synchronisation", "the PTX families")
end

function T.shipped_ptx_sample_mutants_assemble(t)
  local v = jit.versions()
  if not v.ptxas.ok then t.skip("ptxas not found: " .. tostring(v.ptxas.error)) end
  local c = assert(candidate.load(t.root .. "/tasks/samples/vector_add.ptx"))
  local made = assert(mutate.make(c, { arch = "sm_90a", cache_dir = t.tmpdir() }))
  t.eq(#made.mutants, 1, "vector_add.ptx: one mutant")
  t.eq(made.mutants[1].operator, "setp bound off by one")
  t.match(made.mutants[1].mutated, "setp%.gt%.u32")
end

-- A folder of three mutants written with a fake compile, for the scorer.
local function written(t)
  local c = assert(candidate.load(t.root .. "/tasks/reduce/samples/naive_sum_last"))
  local made = assert(mutate.make(c, { compile = fake_compile, families = { "bounds", "synchronisation" }, max = 2 }))
  local dir = t.tmpdir() .. "/m"
  assert(mutate.write(dir, "sum_last_f32/999x1021", c, made, { seed = "0x00000000000000a1", arch = "sm_90a" }))
  return dir, c, json.decode(t.read(dir .. "/mutants.json"), { integers = true })
end

function T.batch_list_names_existing_candidates_with_one_seed(t)
  local dir, c, doc = written(t)
  local lines = {}
  for line in t.read(dir .. "/batch.jsonl"):gmatch("[^\n]+") do lines[#lines + 1] = json.decode(line) end
  t.eq(#lines, #doc.mutants + 1, "the original and every mutant")
  t.eq(lines[1].candidate, "original")
  local loaded = assert(candidate.load(dir .. "/original"))
  t.eq(loaded.hash, c.hash, "original/ is the candidate as it is")
  for i, l in ipairs(lines) do
    t.eq(l.task, "sum_last_f32/999x1021")
    t.eq(l.seed, "0x00000000000000a1", "one seed for every line")
    local m = assert(candidate.load(dir .. "/" .. l.candidate))
    if i > 1 then t.eq(m.hash, doc.mutants[i - 1].hash, l.candidate .. ": mutants.json has its hash") end
  end
  -- klab batch reads the list: no GPU here, so it stops at "nothing could be evaluated" (3), not at the list (2)
  local code, _, err = klab(t, "batch " .. sh_quote(dir .. "/batch.jsonl") .. " --no-timing --cpu 1 --gpus 1",
    "KLAB_CACHE_DIR=" .. sh_quote(t.tmpdir()))
  t.ok(code == 3 or code == 0, "batch reads the list: " .. tostring(code) .. " " .. err)
  t.ok(not err:find("expected {", 1, true), err)
end

function T.batch_refuses_a_bad_seed_in_a_line(t)
  local dir = t.tmpdir()
  local f = assert(io.open(dir .. "/b.jsonl", "w"))
  f:write('{"task": "sum_last_f32/999x1021", "candidate": "' .. t.root .. '/tasks/reduce/samples/naive_sum_last", '
    .. '"seed": "nope"}\n')
  f:close()
  local code, _, err = klab(t, "batch " .. sh_quote(dir .. "/b.jsonl"))
  t.eq(code, 2)
  t.match(err, "b%.jsonl:1: \"seed\" must be")
end

-- A result as klab batch --json prints it.
local function result(hash, verdict, sums, seed)
  local trials = {}
  for i, s in ipairs(sums or {}) do trials[i] = { label = "trial " .. i, passed = true, outputs = { Y = s } } end
  return { candidate = hash, verdict = verdict, seed = seed or "0x00000000000000a1",
    stages = { correctness = { trials = trials } } }
end

function T.score_counts_caught_equivalent_and_survivors(t)
  local dir, _, doc = written(t)
  local ms = doc.mutants
  t.ok(#ms >= 4, "four mutants to judge")
  local rs = {
    result(doc.original.hash, "passed", { "aa", "bb" }),
    result(ms[1].hash, "incorrect", {}),                       -- caught
    result(ms[2].hash, "passed", { "aa", "bb" }),              -- equivalent: same bits on every trial
    result(ms[3].hash, "target_not_executed", { "aa", "bc" }), -- survivor: the second trial differs
    result(ms[4].hash, "unknown", {}),                         -- not judged
  }
  local lines = {}
  for i, r in ipairs(rs) do lines[i] = json.encode(r) end
  local f = assert(io.open(dir .. "/results.jsonl", "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  local run = assert(score.load(dir))
  local tab = assert(score.table { run })
  t.eq(tab.all.mutants, #ms)
  t.eq(tab.all.caught, 1)
  t.eq(tab.all.equivalent, 1)
  t.eq(tab.all.survivors, 1)
  t.eq(tab.all.unjudged, #ms - 3, "no result or unknown: not judged")
  t.eq(tab.tasks.reduce.caught, 1, "by task family")
  t.eq(#tab.survivors, 1)
  t.eq(tab.survivors[1].id, ms[3].id)
  local text = score.format(tab)
  t.match(text, ms[3].id .. "  [^\n]*kernel%.cu:" .. ms[3].line, "the survivor with its file:line")
  t.match(text, "\nall%s+" .. #ms .. "%s+1%s+2%s+1%s+1%s+50%.0%%", "the score leaves the equivalent out")
  -- the command prints the same table
  local code, out = klab(t, "mutate --score " .. sh_quote(dir))
  t.eq(code, 0)
  t.eq(out, text)
  -- a different seed is not the same inputs: never equivalent
  t.eq(score.classify(rs[1], result("x", "passed", { "aa", "bb" }, "0x2")), "survivor")
  t.eq(score.classify(rs[1], rs[3]), "equivalent")
  -- an original that did not pass scores nothing
  rs[1].verdict = "incorrect"
  run.results[doc.original.hash] = rs[1]
  local none, why = score.table { run }
  t.eq(none, nil)
  t.match(why, "original's verdict is incorrect")
  -- nor one that could not be judged (no GPU): that is said, not scored as a failure
  rs[1].verdict, rs[1].reason = "unknown", "GPU stages skipped: no GPU"
  local _, uwhy, kind = score.table { run }
  t.match(uwhy, "original could not be judged %(unknown: GPU stages skipped")
  t.eq(kind, "unjudged")
end

function T.score_without_results_says_how_to_get_them(t)
  local dir = written(t)
  local code, _, err = klab(t, "mutate --score " .. sh_quote(dir))
  t.eq(code, 2)
  t.match(err, "klab batch .*batch%.jsonl %-%-json > .*results%.jsonl")
  t.eq(select(2, err:gsub("\n", "")), 1, "one line")
end

function T.bad_input_is_one_line_and_exit_2(t)
  local cache = "KLAB_CACHE_DIR=" .. sh_quote(t.tmpdir())
  local sample = sh_quote(t.root .. "/tasks/reduce/samples/naive_sum_last")
  local out = t.tmpdir()
  local cases = {
    { "mutate sum_last_f32/999x1021 " .. sh_quote(out .. "/missing"), "no such file" },
    { "mutate sum_last_f32/999x1021 " .. sample .. " --families bound", "did you mean 'bounds'" },
    { "mutate no_such_task/1 " .. sample, "no_such_task" },
    { "mutate sum_last_f32/999x1021", "expected TASK CANDIDATE" },
  }
  local f = assert(io.open(out .. "/keep.txt", "w"))
  f:write("mine\n")
  f:close()
  cases[#cases + 1] = { "mutate sum_last_f32/999x1021 " .. sample .. " --out " .. sh_quote(out), "not empty" }
  for _, case in ipairs(cases) do
    local code, _, err = klab(t, case[1], cache)
    t.eq(code, 2, case[1])
    t.match(err, case[2], case[1])
    t.eq(select(2, err:gsub("\n", "")), 1, "one line: " .. err)
  end
  t.eq(t.read(out .. "/keep.txt"), "mine\n", "a refused --out is left as it was")
end

function T.own_earlier_output_is_replaced(t)
  need_nvrtc(t)
  local cache = "KLAB_CACHE_DIR=" .. sh_quote(t.tmpdir())
  local sample = sh_quote(t.root .. "/tasks/reduce/samples/naive_sum_last")
  local out = t.tmpdir() .. "/m"
  local args = "mutate sum_last_f32/999x1021 " .. sample .. " --out " .. sh_quote(out) .. " --seed 0x5"
  local code, stdout, err = klab(t, args .. " --families bounds,synchronisation", cache)
  t.eq(code, 0, err)
  t.match(stdout, "bounds%s+%d+ written")
  t.ok(t.read(out .. "/bounds_01/kernel.cu") ~= nil, "a bounds mutant")
  code, _, err = klab(t, args .. " --families synchronisation", cache)
  t.eq(code, 0, "klab mutate's own output may be written again: " .. err)
  t.eq(t.read(out .. "/bounds_01/kernel.cu"), nil, "the earlier mutants are gone")
  t.ok(t.read(out .. "/synchronisation_01/kernel.cu") ~= nil)
  t.match(t.read(out .. "/batch.jsonl"), '"seed":"0x0000000000000005"', "--seed, as seeds are written")
  -- --list writes nothing
  local lout = t.tmpdir() .. "/l"
  code, stdout = klab(t, "mutate sum_last_f32/999x1021 " .. sample .. " --list --out " .. sh_quote(lout), cache)
  t.eq(code, 0)
  t.match(stdout, "bounds_01%s+%S")
  t.eq(require("klab.fs").type(lout), nil, "--list writes no folder")
end

-- On a GPU: the correctness stage's output checksums tell an equivalent
-- mutant (the same bits under one seed) from one that survives or is caught.
function T.gpu_output_checksums_tell_equivalent_mutants(t)
  t.need_gpu()
  local task = "sum_last_f32/999x1021"
  local c = assert(candidate.load(t.root .. "/tasks/reduce/samples/naive_sum_last"))
  local s <close> = require("klab.eval").session {}
  local o = { timing = false, seed = "0x00000000000000b2" }
  local r1 = assert(s:evaluate(task, c, o))
  local r2 = assert(s:evaluate(task, c, o))
  t.eq(r1.verdict, "passed", r1.reason)
  local sums = r1.stages.correctness.trials[1].outputs
  t.match(sums and sums.Y, "^%x+$", "a checksum of output Y")
  t.eq(score.classify(r1, r2), "equivalent", "the same candidate and seed: the same bits")
  -- the input rounded to bf16: still within tolerance, other bits
  local made = assert(mutate.make(c, { families = { "precision" }, arch = "sm_90a", cache_dir = t.tmpdir() }))
  local rounded
  for _, m in ipairs(made.mutants) do
    if m.operator == "input rounded to bf16" then rounded = m end
  end
  local r3 = assert(s:evaluate(task, candidate.new { lang = "cuda", code = rounded.code, plan = c.plan }, o))
  t.ok(score.classify(r1, r3) ~= "equivalent", "a mutant with other outputs is not equivalent: " .. r3.verdict)
end

return T
