-- Tests of the stage registry (klab.eval.stages): every stage runs through
-- it, its code is the module its row names, and every measurement a result
-- can carry is declared by the row of the stage that records it, with the
-- unit that is stored.
local stages = require "klab.eval.stages"
local record = require "klab.eval.stage.record"

local T = {}

-- The Lua files under a folder of the repository, comments removed.
local function sources(root, dir)
  local out = {}
  local p = assert(io.popen("cd '" .. root .. "' && find " .. dir .. " -name '*.lua' | sort"))
  for path in p:lines() do
    local f = assert(io.open(root .. "/" .. path, "rb"))
    local src = f:read("a"):gsub("%-%-%[(=*)%[.-%]%1%]", ""):gsub("%-%-[^\n]*", "")
    f:close()
    out[#out + 1] = { path = path, src = src }
  end
  p:close()
  return out
end

function T.every_row_names_code_that_loads_and_runs(t)
  local seen, files = {}, {}
  for i, s in ipairs(stages.LIST) do
    t.ok(type(s.code) == "string", s.name .. " names its code")
    local ok, mod = pcall(stages.code, s.name)
    t.ok(ok, s.name .. ": " .. tostring(mod))
    if ok then
      t.eq(type(mod.run), "function", s.name .. "'s code has run(run)")
      t.eq(mod, require(s.code), s.name .. "'s code is the module its row names")
      -- A stage that declares measurements says how to read them.
      t.eq(s.measures ~= nil, type(mod.measurements) == "function", s.name .. ": measures and measurements() go together")
    end
    for _, need in ipairs(s.needs) do
      t.ok(seen[need], s.name .. " needs " .. need .. ", a stage of an earlier row")
    end
    seen[s.name] = i
    files[s.code] = true
  end
  -- A file of eval/stage/ is a stage: it has its row.
  local p = assert(io.popen("cd '" .. t.root .. "' && ls scripts/klab/eval/stage/"))
  local n = 0
  for f in p:lines() do
    n = n + 1
    local name = "klab.eval.stage." .. f:gsub("%.lua$", "")
    t.ok(files[name], name .. " is the code of a row")
  end
  p:close()
  t.ok(n >= 10, "found the stage files (" .. n .. ")")
end

function T.a_stage_not_in_the_registry_cannot_run(t)
  t.raises(function() stages.run("compile", "caller", { result = { stages = {} } }) end, "no caller stage compile")
  t.raises(function() stages.code("compile") end, "no stage compile")
  -- A worker's stage is never run by the caller, nor the caller's by a worker.
  t.raises(function() stages.run("load", "caller", {}) end, "no caller stage load")
  t.raises(function() stages.run("build", "worker", {}) end, "no worker stage build")
  -- The worker refuses a job that names no stage or skips a stage's need,
  -- before any stage runs (no GPU is needed to see it).
  local gpu = require "klab.eval.gpu"
  t.raises(function() gpu.run { stages = { "load", "bogus" }, opts = {} } end, "no stage bogus")
  t.raises(function() gpu.run { stages = { "correctness" }, opts = {} } end, "the correctness stage needs the load stage")
  t.raises(function() gpu.run { stages = { "replay", "load" }, opts = {} } end, "the replay stage needs the load stage")
  -- The lists the pipeline sends are in order.
  for _, list in ipairs { stages.worker(), { "load", "replay" }, { "baseline" }, { "load", "instructions", "timing" } } do
    t.ok(pcall(stages.check_order, list), table.concat(list, ", "))
  end
end

-- Stage modules are run by the registry only: outside eval/stage/ no
-- module requires one, and inside, a stage uses another's helpers (load's
-- attach, baseline's runner), never its run. Every stage the code names
-- through stages.run has a row.
function T.the_pipeline_runs_stages_through_the_registry(t)
  local bad = {}
  for _, f in ipairs(sources(t.root, "scripts/klab")) do
    local inside = f.path:find("^scripts/klab/eval/stage/") ~= nil
    for var, mod in f.src:gmatch("local%s+([%w_]+)%s*=%s*require%s*%(?%s*[\"'](klab%.eval%.stage%.[%w_]+)[\"']") do
      if not inside then bad[#bad + 1] = f.path .. " requires " .. mod end
      if f.src:find(var .. "%.run%(") then bad[#bad + 1] = f.path .. " calls " .. mod .. ".run" end
    end
    if not inside and f.src:find("require%s*%(?%s*[\"']klab%.eval%.stage%.") then
      bad[#bad + 1] = f.path .. " requires a stage module"
    end
    for name in f.src:gmatch("stages%.run%(%s*\"([%w_]+)\"") do
      if not stages.get(name) then bad[#bad + 1] = f.path .. " runs " .. name .. ", which has no row" end
    end
  end
  table.sort(bad)
  t.eq(table.concat(bad, "; "), "")
end

-- A result with every stage's figures filled in, as the worker sends it.
local function full_result()
  return { stages = {
    build = { ok = true, kernels = { { registers = 40 } }, census = { instructions = 9, wgmma = 3, ["ld:global"] = 5 },
      sass = { families = { wgmma = 4, ["tma.load"] = 1 } } },
    plan = { launches = 1 },
    sanitizer = { status = "ok", errors = 0, clean = true },
    load = { memory = { total = 4096 } },
    correctness = { trials = {} },
    instructions = { status = "ok", flops = { hgmma = 1e9, hmma = 2, utc = 3, other = 5, frac = { tensor = 0.99 } },
      families = { wgmma = { count = 7 } }, verified = true,
      profile = { sm_pct = 50, mem_pct = 20, dram_pct = 10, occupancy_pct = 30, tensor_pct = 70, dram_bytes = 1e6,
        dram_ratio = 1.2, waves = 1.5 } },
    timing = { candidate = { median = 10, mean = 11, min = 9, p10 = 9.5, p90 = 12, ci_low = 9.8, ci_high = 10.2, n = 100,
      tflops = 500 }, baseline = { median = 20 }, speedup = 2, speedup_tf32 = 1.5, floor = { us = 3 } },
  } }
end

-- What the stages read from a result is what their rows declare, both
-- ways: every row stored carries its declaration's unit, and every
-- declaration (a family through one of its members) is recorded from a
-- result that has every figure.
function T.the_stored_rows_are_the_declared_measurements(t)
  local meas = record.rows(full_result())
  local covered = {}
  for name, m in pairs(meas) do
    local d = stages.measurement(name)
    t.ok(d ~= nil, name .. " is declared")
    if d then
      t.eq(m.unit, d.unit, name .. "'s unit")
      covered[d.name] = true
    end
  end
  for _, d in ipairs(stages.measurements()) do t.ok(covered[d.name], d.name .. " is recorded from a full result") end
  t.eq(meas.ptx_ld_global.value, 5, "a family member's name")
  t.eq(meas.sass_static_tma_load.value, 1)
  t.eq(meas.ptx_instructions, nil, "the census's total is no family")
  -- Without a baseline or a floor, their measurements are absent; a
  -- profile that did not measure records nothing.
  local r = full_result()
  r.stages.timing.baseline, r.stages.timing.floor.us, r.stages.instructions.status = nil, 0, "unknown"
  meas = record.rows(r)
  t.eq(meas.speedup, nil)
  t.eq(meas.floor_us, nil)
  t.eq(meas.sm_pct, nil)
  t.eq(meas.median_us.unit, "us")
end

-- A stage that records a name its row does not declare (or another
-- stage's) is a bug that stops the record, never a row in the store.
function T.an_undeclared_measurement_is_refused(t)
  local key = "klab.eval.stage.load"
  local real = require(key)
  local function with(fake, fn)
    package.loaded[key] = { run = real.run, measurements = fake }
    local ok, err = pcall(fn)
    package.loaded[key] = real
    if not ok then error(err, 0) end
  end
  local r = { stages = { load = {} } }
  t.raises(function() with(function(_, put) put("peak_mem_bytes", 1) end, function() record.rows(r) end) end,
    "the load stage records measurement peak_mem_bytes, which its row in klab.eval.stages does not declare")
  t.raises(function() with(function(_, put) put("median_us", 1) end, function() record.rows(r) end) end,
    "the load stage records measurement median_us")
  t.eq(record.rows(r).device_memory_bytes, nil, "the real stage is back")
  -- The report names only declared measurements.
  t.eq(stages.declared("floor_us"), "floor_us")
  t.raises(function() stages.declared("mem_efficiency") end, "no stage declares the measurement mem_efficiency")
  t.eq(stages.measurement("inst_"), nil, "a family's prefix alone is no member")
  t.eq(stages.measurement("ptx_*"), nil)
end

-- Each measurement name written by code in eval/ (a stage's put) is
-- declared: literal names, and the prefixes of names built from a family.
function T.every_name_the_code_writes_is_declared(t)
  local names, bad = 0, {}
  for _, f in ipairs(sources(t.root, "scripts/klab/eval")) do
    for name, rest in f.src:gmatch("put%(%s*\"([%w_]+)\"%s*(%.?%.?)") do
      names = names + 1
      if rest == ".." then
        if not stages.measurement(name .. "x") or stages.measurement(name .. "x").name ~= name .. "*" then
          bad[#bad + 1] = f.path .. ": family " .. name .. "*"
        end
      elseif not stages.measurement(name) then
        bad[#bad + 1] = f.path .. ": " .. name
      end
    end
    -- The record stage alone writes measurement rows.
    if f.src:find("measurements%s*=%s*[%w_.]+%(") and f.path ~= "scripts/klab/eval/stage/record.lua" then
      bad[#bad + 1] = f.path .. " writes measurement rows"
    end
  end
  t.ok(names >= 30, "found the stages' puts (" .. names .. ")")
  table.sort(bad)
  t.eq(table.concat(bad, "; "), "")
end

-- docs/store.md holds the measurements' table the registry makes: a name
-- the registry does not declare, or one it declares that the page misses,
-- fails here.
function T.the_measurements_table_is_the_registrys(t)
  local doc = assert(t.read(t.root .. "/docs/store.md"))
  local want = stages.markdown()
  local head = want:match("^[^\n]+")
  local at = doc:find(head, 1, true)
  t.ok(at ~= nil, "docs/store.md has the measurements' table")
  local rows = {}
  for line in doc:sub(at or #doc):gmatch("([^\n]*)\n") do
    if line == "" then break end
    rows[#rows + 1] = line
  end
  t.eq(table.concat(rows, "\n"), want, "docs/store.md's table is stages.markdown()")
  -- Every declaration is a row of it.
  for _, m in ipairs(stages.measurements()) do t.ok(want:find("| `" .. m.name .. "` |", 1, true), m.name) end
end

return T
