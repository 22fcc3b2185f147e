-- lang_test.lua: a candidate language is one module of scripts/klab/lang/
-- and its name in klab.lang.NAMES. A language registered here, in this
-- process only, is honoured by everything that asks about languages: the
-- candidate loader, a model reply's extraction, lang.compile, the build
-- stage's record and klab mutate.
local T = {}

local lang = require "klab.lang"

-- Runs f with a language "fake" registered (one module, one row), then
-- takes it out again, whatever f did.
local function with_fake(f)
  local built = {}
  local fake = {
    title = "Fake", file = "kernel.fk", suffixes = { ".fk", ".fkh" }, fences = { "fake" }, more_fences = { "fk" },
    kernel_hint = "a KERNEL line in Fake", reply_default = false, records = { "fake_version" },
    untagged = function(code) return code:find("^FAKE") ~= nil end,
    kernel = function(code) return code:find("KERNEL") ~= nil end,
    build = function(run)
      built[#built + 1] = run.cand.code
      return { cubin = "", cubin_hash = "f", kernels = {}, fake_version = "1.0" }
    end,
  }
  package.loaded["klab.lang.fake"] = fake
  lang.NAMES[#lang.NAMES + 1] = "fake"
  local ok, err = pcall(f, built)
  table.remove(lang.NAMES)
  package.loaded["klab.lang.fake"] = nil
  if not ok then error(err, 0) end
end

function T.a_registered_language_is_loaded_as_a_candidate(t)
  local candidate = require "klab.eval.candidate"
  t.eq(lang.of_file("x.fk"), nil, "not known before it is registered")
  with_fake(function()
    t.eq(lang.of_file("x.fk"), "fake")
    t.eq(lang.of_file("dir/x.fkh"), "fake")
    local dir = t.tmpdir()
    assert(require("klab.fs").write(dir .. "/kernel.fk", "KERNEL k\n"))
    local c, err = candidate.load(dir)
    t.eq(c and c.lang, "fake", tostring(err))
    t.eq(c and c.file, dir .. "/kernel.fk")
    c, err = candidate.load(dir .. "/kernel.fk")
    t.eq(c and c.lang, "fake", tostring(err))
    -- Its file joins the others in the loader's messages.
    assert(require("klab.fs").write(dir .. "/kernel.cu", "__global__ void k() {}\n"))
    c, err = candidate.load(dir)
    t.eq(c, nil)
    t.match(err, "both kernel%.cu and kernel%.fk; keep one %(.*kernel%.fk for Fake%)")
    t.match(select(2, candidate.load(t.tmpdir())), "expected kernel%.cu, kernel%.ptx, kernel%.py, kernel%.fk or one "
      .. "%.cu/%.ptx/%.py/%.fk file")
    t.ok(candidate.new { code = "KERNEL", lang = "fake" }, "a candidate of the language")
    t.match(select(2, candidate.new { code = "x", lang = "cobol" }), "'triton', .* or 'fake', got cobol")
  end)
  -- Taken out again: the loader no longer knows it.
  t.eq(lang.of_file("x.fk"), nil)
  local _, gone = require("klab.eval.candidate").new { code = "x", lang = "fake" }
  t.match(gone, "must be 'cuda', 'ptx', 'triton'")
  t.ok(not gone:find("'fake'", 1, true), "the fake language is not among them: " .. gone)
end

function T.a_registered_language_is_read_from_replies_when_asked(t)
  local extract = require "klab.experiment.extract"
  local reply = "Here:\n```fake\nKERNEL k\n```\n```lua\nreturn { launches = {} }\n```\n"
  with_fake(function()
    -- Not a default language: a reply is read for it only when asked.
    local c, why = extract.candidate(reply)
    t.eq(c, nil)
    t.match(why, "no code block in cuda, cu, c%+%+, cpp or ptx %(found: fake%)")
    c, why = extract.candidate(reply, { languages = { "fake" } })
    t.eq(c and c.lang, "fake", tostring(why))
    t.eq(c and c.code, "KERNEL k\n")
    t.eq(c and c.plan_block, 2)
    -- Its other tag, an untagged block its module knows, and its kernel rule.
    c = extract.candidate("```fk\nKERNEL a\n```\n```\nFAKE KERNEL b\n```\n", { languages = { "cuda", "fake" } })
    t.eq(c and c.code, "FAKE KERNEL b\n")
    c, why = extract.candidate("```fake\nno kernel here\n```\n", { languages = { "cuda", "fake" } })
    t.match(why, "a __global__ function in CUDA, a KERNEL line in Fake")
    c, why = extract.candidate("no code", { languages = { "fake", "ptx" } })
    t.match(why, "put the kernel in a ```fake %(or ```ptx%) block")
  end)
end

function T.a_registered_language_is_built_and_recorded(t)
  with_fake(function(built)
    local c = assert(require("klab.eval.candidate").new { code = "KERNEL k\n", lang = "fake" })
    local res = lang.compile { cand = c, arch = "sm_90a", opts = {} }
    t.eq(res and res.fake_version, "1.0")
    t.eq(built[1], "KERNEL k\n", "its build ran")
    -- The build stage keeps what the language says it records.
    local r = { stages = {} }
    require("klab.eval.stage.build").run { cand = c, arch = "sm_90a", opts = { census_later = true }, result = r,
      task = { reference = { path = "reference.cu", code = "not a kernel" }, baseline = {} } }
    t.eq(r.stages.build and r.stages.build.language, "fake")
    t.eq(r.stages.build and r.stages.build.fake_version, "1.0")
    -- A language without mutation operators is refused by klab mutate, by name.
    local made, why = require("klab.mutate").make(c, { compile = function() return "h" end })
    t.eq(made, nil)
    t.match(why, "no operators for Fake")
  end)
end

return T
