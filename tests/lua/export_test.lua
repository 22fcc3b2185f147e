-- klab.report.export and `klab export sft` on the store of metrics_test.lua.
--
-- By hand: 9 correct turns with a reply (T1 t2, T1 t3, T2 t1, T3 t5, T5 t1,
-- T6 t1, T6 t2, T8 t2, e2 t1) and 3 that follow a failed turn (T1 t2 after
-- compile_error, T3 t5 after incorrect, T8 t2 after extraction_error).

local export = require "klab.report.export"
local store = require "klab.store"
local cjson = require "cjson"

local function here()
  return debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."
end
local fixture = getmetatable(dofile(here() .. "/metrics_test.lua")).__index.fixture

local sq = require("klab.command").shell_quote

local function make_store(t)
  local dir = t.tmpdir()
  local path = dir .. "/fx.db"
  fixture(path):close()
  return path, dir
end

local function lines(path)
  local out = {}
  local f = assert(io.open(path))
  for l in f:lines() do out[#out + 1] = l end
  f:close()
  return out
end

local function kinds(records)
  local n = { generation = 0, repair = 0 }
  for _, r in ipairs(records) do n[r.kind] = n[r.kind] + 1 end
  return n
end

local tests = {}

function tests.count_matches_the_store(t)
  local path = make_store(t)
  local recs, s = assert(export.sft(path))
  local n = kinds(recs)
  t.eq(n.generation, 9)
  t.eq(n.repair, 3)
  t.eq(s.total, 12)
  -- The same counts straight from SQL.
  local db <close> = assert(store.open(path, { readonly = true }))
  local g = db:first("SELECT count(*) AS n FROM turns WHERE verdict = 'passed' AND reply IS NOT NULL").n
  local r = db:first([[SELECT count(*) AS n FROM turns b JOIN turns a ON a.trajectory_id = b.trajectory_id
      AND a.turn = b.turn - 1 WHERE b.verdict = 'passed' AND b.reply IS NOT NULL AND a.verdict <> 'passed'
      AND a.reply IS NOT NULL AND a.feedback IS NOT NULL]]).n
  t.eq(n.generation, g)
  t.eq(n.repair, r)
  t.eq(s.by_task.gemm.generation, 7)
  t.eq(s.by_task.attn.repair, 2)
  t.eq(s.failures.compile_error, 1)
  t.eq(s.failures.incorrect, 1)
  t.eq(s.failures.extraction_error, 1)
end

function tests.record_shapes(t)
  local path = make_store(t)
  local recs = assert(export.sft(path))
  -- Generation records come first, by task, fastest first.
  local first = recs[1]
  t.eq(first.kind, "generation")
  t.eq(first.task, "attn")
  t.eq(first.speedup, 0.3)
  t.eq(first.verified, nil, "unknown stays absent")
  t.eq(#first.messages, 3)
  t.eq(first.messages[3].role, "assistant")
  t.eq(first.messages[3].content, first.completion)
  t.eq(first.completion, "reply 5 of mA/attn/1")
  t.eq(first.kernel.language, "ptx")
  t.match(first.kernel.code, "^// kernel %d+$")
  t.eq(first.arch, "sm_90a")
  t.eq(first.id, "e1/mA/attn/t/1/5")
  local gemm1
  for _, r in ipairs(recs) do if r.kind == "generation" and r.task == "gemm" then gemm1 = gemm1 or r end end
  t.eq(gemm1.speedup, 2.0)
  t.eq(gemm1.verified, false)
  local rep
  for _, r in ipairs(recs) do if r.kind == "repair" and r.model == "mA" and r.task == "gemm" then rep = r end end
  t.ok(rep, "T1's repair")
  t.eq(rep.turn, 2)
  t.eq(rep.failed.turn, 1)
  t.eq(rep.failed.verdict, "compile_error")
  t.eq(rep.failed.reply, "reply 1 of mA/gemm/1")
  t.eq(rep.feedback, "feedback 1: compile_error")
  t.eq(rep.completion, "reply 2 of mA/gemm/1")
  t.eq(#rep.messages, 5)
  t.eq(rep.messages[1].content, "You write kernels.")
  t.eq(rep.messages[4].content, rep.feedback)
  t.eq(rep.messages[5].role, "assistant")
  t.eq(rep.verified, true)
end

function tests.filters_and_caps(t)
  local path = make_store(t)
  local n = kinds(assert(export.sft(path, { verified = true })))
  t.eq(n.generation, 6, "T1 t2, T2 t1, T5 t1, T6 t2, T8 t2, e2 t1")
  t.eq(n.repair, 2, "T3 t5 is unknown")
  local recs, s = assert(export.sft(path, { min_speedup = 1.0 }))
  n = kinds(recs)
  t.eq(n.generation, 3, "1.2, 1.5, 2.0")
  t.eq(n.repair, 0)
  t.eq(s.dropped.min_speedup, 6)
  recs, s = assert(export.sft(path, { cap = 1 }))
  n = kinds(recs)
  t.eq(n.generation, 2)
  t.eq(n.repair, 2)
  t.eq(s.dropped.cap, 8)
  t.eq(recs[2].task, "gemm")
  t.eq(recs[2].speedup, 2.0, "the cap keeps the fastest")
  n = kinds(assert(export.sft(path, { kind = "repair" })))
  t.eq(n.generation, 0)
  t.eq(n.repair, 3)
  n = kinds(assert(export.sft(path, { kind = "generation", experiment = "e2" })))
  t.eq(n.generation, 1)
  t.raises(function() export.sft(path, { kind = "bogus" }) end, "kind")
  t.raises(function() export.sft(path, { cap = 1.5 }) end, "cap")
  local text = export.summary_text(s)
  t.match(text, "^4 records: 2 generation, 2 repair")
  t.match(text, "dropped: 0 not verified, 0 at or below the minimum speedup, 8 over the per%-task cap")
end

function tests.jsonl_is_valid_and_deterministic(t)
  local path, dir = make_store(t)
  for _, f in ipairs { "a", "b" } do
    local code, out, err = t.sh(sq(t.klab) .. " export sft " .. sq(path) .. " --out " .. sq(dir .. "/" .. f .. ".jsonl"))
    t.eq(code, 0, err)
    t.match(out, "wrote 12 records")
  end
  local a, b = lines(dir .. "/a.jsonl"), lines(dir .. "/b.jsonl")
  t.eq(#a, 12)
  for i, l in ipairs(a) do
    local ok, v = pcall(cjson.decode, l)
    t.ok(ok and type(v) == "table" and (v.kind == "generation" or v.kind == "repair"), "line " .. i)
    t.eq(l, b[i], "the same bytes")
  end
  local none, msg, code = export.sft(dir .. "/missing.db")
  t.eq(none, nil)
  t.match(msg, "^export: no such store file")
  t.eq(code, "ENOENT")
  local db = assert(store.open(dir .. "/plain.db"))
  db:close()
  none, msg = export.sft(dir .. "/plain.db")
  t.eq(none, nil)
  t.match(msg, "no experiments")
end

function tests.cli(t)
  local path, dir = make_store(t)
  local code, out, err = t.sh(sq(t.klab) .. " export sft " .. sq(path) .. " --out " .. sq(dir .. "/o.jsonl"))
  t.eq(code, 0, err)
  t.match(out, "12 records: 9 generation, 3 repair")
  t.match(out, "wrote 12 records to")
  t.eq(#lines(dir .. "/o.jsonl"), 12)
  code = t.sh(sq(t.klab) .. " export sft " .. sq(path))
  t.eq(code, 0)
  t.eq(#lines(dir .. "/fx_sft.jsonl"), 12, "default: fx_sft.jsonl next to the store")
  code, out, err = t.sh(sq(t.klab) .. " export sft " .. sq(path) .. " --out - --verified --kind generation --cap 2")
  t.eq(code, 0, err)
  local n = 0
  for l in out:gmatch("[^\n]+") do
    n = n + 1
    t.eq(cjson.decode(l).kind, "generation")
  end
  t.eq(n, 3, "verified: gemm 5 capped at 2, attn 1")
  t.match(err, "wrote 3 records to standard output")
  -- Nothing passes the filter: no empty file is left behind, and the line says so.
  code, out = t.sh(sq(t.klab) .. " export sft " .. sq(path) .. " --min-speedup 1000 --out " .. sq(dir .. "/none.jsonl"))
  t.eq(code, 1)
  t.match(out, "nothing exported: no file written")
  t.eq(t.read(dir .. "/none.jsonl"), nil, "no empty file")
  code, out = t.sh(sq(t.klab) .. " export --help")
  t.eq(code, 0)
  t.match(out, "usage: klab export sft DB")
  for _, bad in ipairs { " export", " export csv " .. sq(path), " export sft " .. sq(path) .. " --cap x",
    " export sft " .. sq(path) .. " --min-speedup", " export sft " .. sq(path) .. " --kind all",
    " export sft " .. sq(path) .. " --nope" } do
    code, _, err = t.sh(sq(t.klab) .. bad)
    t.eq(code, 2, bad)
    t.match(err, "^klab export: [^\n]*; 'klab export %-%-help' shows the options\n$", bad)
  end
  code, _, err = t.sh(sq(t.klab) .. " export sft " .. sq(dir .. "/missing.db"))
  t.eq(code, 2, "a missing store is the user's mistake")
  t.match(err, "no such store file")
end

return tests
