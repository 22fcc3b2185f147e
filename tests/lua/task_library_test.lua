-- task_library_test.lua: every task under tasks/ holds together without a
-- GPU: it loads; its reference (and shipped baseline) compiles for Hopper
-- and Blackwell and its plans run; a cuDNN graph baseline describes; its
-- default plan and every sample and known-bad kernel compile and plan; the
-- expected verdicts name real tasks and verdicts. (tests/gpu/tasks_check.lua
-- runs them on a GPU.)
local task = require "klab.task"
local candidate = require "klab.eval.candidate"
local verdict = require "klab.eval.verdict"

local T = {}

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

-- The caller's stages (build and plan) of an evaluation, without a GPU.
local function prepared(_, t_, cand, arch) return require("klab.eval.task_check").prepared(t_, cand, arch) end

function T.every_task_loads_and_prepares(t)
  local all, errs = task.list("tasks")
  t.eq(#errs, 0, table.concat(errs, "; "))
  t.ok(#all > 0, "tasks found")
  local seen_ref = {}
  for _, x in ipairs(all) do
    for _, arch in ipairs { "sm_90a", "sm_100a" } do
      local key = x.reference.path .. arch
      -- A reference compiles once per file and target; its plans run for
      -- every variant (the full and the sampled run, and derive).
      local ok, run = prepared(t, x, nil, arch)
      t.ok(ok, x.name .. " on " .. arch .. ": " .. tostring(run.result.reason))
      -- The timed runs' check draws job.reference.sample units and the
      -- sampled plan is made for as many: more than the task has would
      -- read positions and write reference units past their buffers.
      if ok then
        local ref, units = run.job.reference, run.job.task.total_units
        t.ok(ref.sample >= 1 and ref.sample <= units, string.format("%s: the timed check's %d units fit the task's %d",
          x.name, ref.sample, units))
      end
      if ok and not seen_ref[key] then
        seen_ref[key] = true
        t.ok(run.job.reference.full.launches[1] ~= nil, x.name .. ": the reference launches something")
        t.ok(run.job.reference.sampled.launches[1] ~= nil, x.name .. ": the sampled reference launches something")
      end
      if ok and x.baseline.kind == "shipped" then
        t.ok(run.job.task.baseline.kernel ~= nil, x.name .. ": the shipped baseline built and planned: " ..
          tostring(run.baseline_error))
      end
    end
    if x.baseline.lib == "cudnn" and x.baseline.op == "graph" then
      local d, err = require("klab.dnn").graph_describe(task.plain(x.baseline.spec))
      t.ok(d, x.name .. ": its cuDNN graph describes: " .. tostring(err))
    end
    t.ok(x.flops > 0 and x.bytes > 0, x.name .. " counts its work")
  end
end

-- The conv references: all of y in 64x64 tiles (conv_ref_tiles) for
-- conv2d and the transposed convolution, over a grid that covers every
-- output pixel and channel; a thread per unit for the sampled units and
-- for the depthwise convolution; a thread per unit for all of the
-- channels-first (NCHW, NCDHW) convolutions' y.
function T.conv_references_pick_their_kernels(t)
  local n = 0
  for _, x in ipairs(task.list("tasks")) do
    if x.file:match("^tasks/conv/") then
      n = n + 1
      local ok, run = prepared(t, x, nil, "sm_90a")
      t.ok(ok, x.name .. ": " .. tostring(run.result.reason))
      local channels_first = false
      for _, tag in ipairs(x.tags) do channels_first = channels_first or tag == "nchw" or tag == "ncdhw" end
      if ok and channels_first then
        local full, sampled = run.job.reference.full.launches[1], run.job.reference.sampled.launches[1]
        t.eq(full.kernel, "conv_ncdhw_ref", x.name)
        t.eq(sampled.kernel, "conv_ncdhw_ref", x.name)
        local units = x.buffers.y.numel
        t.ok(full.grid[1] * 256 >= units and (full.grid[1] - 1) * 256 < units, x.name .. ": a thread per unit of y")
      elseif ok then
        local d = x.dims
        local full, sampled = run.job.reference.full.launches[1], run.job.reference.sampled.launches[1]
        local transposed, depthwise = x.base:match("^convt") ~= nil, x.base:match("^dwconv") ~= nil
        t.eq(sampled.kernel, transposed and "conv_bwd_data_ref" or "conv_fwd_ref", x.name .. ": sampled units")
        t.eq(full.kernel, depthwise and "conv_fwd_ref" or "conv_ref_tiles", x.name .. ": all of y")
        if not depthwise then
          local OH, OW = (d.H + 2 * d.P - d.R) // d.U + 1, (d.W + 2 * d.P - d.S) // d.U + 1
          local pixels = transposed and d.N * d.H * d.W or d.N * OH * OW
          local outc = transposed and d.C or d.K
          t.ok(full.grid[1] * 64 >= pixels and (full.grid[1] - 1) * 64 < pixels, x.name .. ": a tile row per 64 pixels")
          t.ok(full.grid[2] * 64 >= outc and (full.grid[2] - 1) * 64 < outc, x.name .. ": a tile column per 64 channels")
        end
      end
    end
  end
  t.ok(n >= 18, "the conv tasks found (" .. n .. ")")
end

-- The GPU suite's false-rejection sweep (tests/gpu/sample_sweep.lua)
-- reaches every family but attention (whose samples attention_check runs
-- on the shapes each supports) through at least one sample that must pass,
-- on every variant of that sample's task; --quick keeps exactly the
-- variants under 10,000 output units.
function T.the_sample_sweep_reaches_every_family(t)
  local sw = dofile(t.root .. "/tests/gpu/sample_sweep.lua")
  local list = sw.pairs {}
  local by_family, by_sample = {}, {}
  for _, p in ipairs(list) do
    by_family[p.family] = (by_family[p.family] or 0) + 1
    local k = p.sample .. " " .. p.task.base
    by_sample[k] = (by_sample[k] or 0) + 1
  end
  local fams = {}
  for _, x in ipairs(task.list("tasks")) do fams[x.file:match("^tasks/([^/]+)/")] = true end
  for fam in pairs(fams) do
    if fam ~= "attention" then t.ok((by_family[fam] or 0) > 0, fam .. ": no sample the sweep can run") end
  end
  local unsupported = {}
  for fam in pairs(fams) do
    local f = io.open("tasks/" .. fam .. "/samples/expected.lua")
    if f then
      f:close()
      for _, e in ipairs(task.returned("tasks/" .. fam .. "/samples/expected.lua") or {}) do
        unsupported["tasks/" .. fam .. "/samples/" .. e.name .. " " .. e.task] = #(e.unsupported or {})
      end
    end
  end
  for k, n in pairs(by_sample) do
    local base = k:match(" (%S+)$")
    t.eq(n, #task.load(base).tasks - (unsupported[k] or 0), k .. ": every variant of the task it handles")
  end
  local quick = sw.pairs { max_units = sw.QUICK_UNITS }
  t.ok(#quick > 0 and #quick < #list, "the quick sweep is a part of the whole")
  for _, p in ipairs(quick) do t.ok(p.units < sw.QUICK_UNITS, p.task.name .. ": under 10,000 units") end
end

-- Samples and known-bad kernels: every entry names a folder that compiles
-- and plans on its task, a real task and a real verdict.
function T.samples_and_bad_kernels_prepare(t)
  local all = task.list("tasks")
  local families = {}
  for _, x in ipairs(all) do families[x.file:match("^tasks/([^/]+)/")] = true end
  local n = 0
  for fam in pairs(families) do
    for _, kind in ipairs { "samples", "bad" } do
      local list = "tasks/" .. fam .. "/" .. kind .. "/expected.lua"
      if exists(list) then
        for _, e in ipairs(require("klab.task").returned(list)) do
          n = n + 1
          t.ok(verdict.valid(e.verdict), list .. ": " .. e.name .. " expects a real verdict")
          local base = e.task
          local ok, tf = pcall(task.load, base or "")
          if base and ok then
            local x = e.variant and task.get(base .. "/" .. e.variant) or tf.tasks[1]
            local c, err = candidate.load("tasks/" .. fam .. "/" .. kind .. "/" .. e.name)
            t.ok(c, list .. ": " .. e.name .. ": " .. tostring(err))
            -- Triton, CuTe and CuTe DSL samples need the pinned triton,
            -- CUTLASS and nvidia-cutlass-dsl (make deps installs them).
            local cutlass = require "klab.lang.cutlass"
            local missing = c and (c.lang == "triton" and select(2, require("klab.lang.triton").venv())
              or c.lang == "cute_dsl" and select(2, require("klab.lang.cute_dsl").venv())
              or c.lang == "cuda" and cutlass.wanted(c.code) and select(2, cutlass.include_dir()))
            if missing then
              print("  " .. fam .. "/" .. kind .. "/" .. e.name .. " not built: " .. missing)
            elseif c then
              local pok, run = prepared(t, x, c, "sm_90a")
              -- A kernel meant to be refused at build time says so.
              local want_build_fail = e.verdict == "compile_error" or e.verdict == "plan_error"
              t.ok(pok or want_build_fail, fam .. "/" .. kind .. "/" .. e.name .. " on " .. x.name .. ": " ..
                tostring(run.result.reason))
            end
          elseif fam ~= "attention" then
            t.ok(false, list .. ": " .. e.name .. " names no task (task = \"" .. tostring(base) .. "\")")
          end
        end
      end
    end
  end
  t.ok(n > 0, "samples and known-bad kernels found")
end

-- docs/tasks.md's library table names every task of the library (outside
-- GEMM, attention and serving, which have sections of their own) with the kind of
-- baseline it has: a shipped kernel exactly when the task ships one, the
-- faster of two where a kernel is timed beside the library's, and the
-- baseline's fraction of the physical floor, explained under 70%.
function T.library_table_in_the_docs(t)
  local text = assert(require("klab.fs").read(t.root .. "/docs/tasks.md"))
  local rows = {}
  local n = 0
  local floors = {}
  for name, base, rest in text:gmatch("\n| [%w_]+ | `([%w_]+)` | ([^|]+) |([^\n]*)") do
    rows[name], n = base, n + 1
    floors[name] = rest:match("^[^|]*| ([^|]*) |%s*$")
  end
  t.ok(n >= 30, "the table has a row per task (" .. n .. ")")
  local all = task.list(t.root .. "/tasks")
  local seen = {}
  for _, x in ipairs(all) do
    local fam = x.file:match("tasks/([^/]+)/")
    if fam ~= "gemm" and fam ~= "attention" and fam ~= "serving" and not seen[x.base] then
      seen[x.base] = true
      local row = rows[x.base]
      t.ok(row ~= nil, x.base .. " is in docs/tasks.md's library table")
      if row then
        local shipped = row:find("shipped kernel", 1, true) ~= nil
        t.eq(shipped, x.baseline.source ~= nil, x.base .. ": the table says " .. row)
        -- A kernel timed beside the library's: the row says which was faster.
        t.eq(row:find("faster of", 1, true) ~= nil, x.baseline.shipped ~= nil, x.base .. ": the table says " .. row)
        -- Each main shape's fraction of the physical floor; a memory-bound
        -- baseline under 70% of it is explained by its task.
        local fl = floors[x.base]
        -- (A task written without a GPU says so until it is measured.)
        t.ok(fl and (fl:find("%d+%% [mc]") or fl == "not measured yet"), x.base
          .. ": the table gives the baseline's fraction of the floor")
        for pct in (fl or ""):gmatch("(%d+)%% memory") do
          if tonumber(pct) < 70 then
            t.ok(type(x.baseline.floor_note) == "string", x.base .. ": " .. pct .. "% of the DRAM floor, and the task "
              .. "says why (baseline.floor_note)")
          end
        end
      end
    end
  end
  for name in pairs(rows) do t.ok(seen[name], "docs/tasks.md lists " .. name .. ", a task that exists") end
end

-- docs/tasks.md's serving table ("The serving tasks") has a row per task of
-- tasks/serving and names no other; each row says the baseline is a shipped
-- kernel (every serving task ships one) and gives the floor fraction, or
-- says it is not measured yet.
function T.serving_table_in_the_docs(t)
  local text = assert(require("klab.fs").read(t.root .. "/docs/tasks.md"))
  local section = text:match("\n## The serving tasks\n(.-)\n### ")
  if not t.ok(section, "docs/tasks.md has a section 'The serving tasks'") then return end
  local rows = {}
  for name, rest in section:gmatch("\n| `([%w_]+)` |([^\n]*)") do rows[name] = rest end
  local seen = {}
  for _, x in ipairs(task.list(t.root .. "/tasks")) do
    if x.family == "serving" and not seen[x.base] then
      seen[x.base] = true
      local row = rows[x.base]
      if t.ok(row ~= nil, x.base .. " is in docs/tasks.md's serving table") then
        t.eq(row:find("shipped kernel", 1, true) ~= nil, x.baseline.source ~= nil, x.base .. ": " .. row)
        local floor = row:match("| ([^|]*) |%s*$")
        t.ok(floor and (floor:find("%d+%% [mc]") or floor == "not measured yet"), x.base .. ": the floor fraction, "
          .. "or 'not measured yet': " .. tostring(floor))
      end
    end
  end
  t.ok(next(seen) ~= nil, "tasks/serving has tasks")
  for name in pairs(rows) do t.ok(seen[name], "the serving table lists " .. name .. ", a serving task") end
end

-- The judge fills every input of every library task (klab's fill kernel
-- knows the buffer's element type): a type the schema accepts but the
-- judge cannot write would fail every evaluation of the task on a GPU,
-- where no offline check would have seen it.
function T.the_judge_fills_every_input_type(t)
  local judge = require "klab.judge"
  local n = 0
  for _, x in ipairs(task.list(t.root .. "/tasks")) do
    for _, b in pairs(x.buffers) do
      if b.role == "input" then
        n = n + 1
        t.ok(judge.dtype_size(b.dtype) ~= nil, x.name .. ": input " .. b.name .. " of type " .. b.dtype)
      end
    end
  end
  t.ok(n > 0, "inputs found")
end

-- Every serving task has a sample that must pass, so the sample sweep
-- evaluates each of them on every variant.
function T.the_sample_sweep_reaches_every_serving_task(t)
  local sw = dofile(t.root .. "/tests/gpu/sample_sweep.lua")
  local swept = {}
  for _, p in ipairs(sw.pairs { families = { serving = true } }) do swept[p.task.name] = true end
  local n = 0
  for _, x in ipairs(task.list(t.root .. "/tasks")) do
    if x.family == "serving" then
      n = n + 1
      t.ok(swept[x.name], x.name .. ": the sample sweep runs a sample on it")
    end
  end
  t.ok(n > 0, "tasks/serving has tasks")
end

-- A copy of the library's family fam in the folder dir (made), as dir/fam.
local function copy_family(t, fam, dir)
  local q = require("klab.command").shell_quote
  t.eq((t.sh(("mkdir -p %s && cp -r %s %s"):format(q(dir), q(t.root .. "/tasks/" .. fam), q(dir .. "/" .. fam)))), 0)
  return dir .. "/" .. fam
end

-- The file at path with the first match of the pattern `from` replaced (one there must be).
local function edit_once(t, path, from, to)
  local s = assert(t.read(path))
  local n
  s, n = s:gsub(from, to, 1)
  t.eq(n, 1, path .. ": " .. from)
  local f = assert(io.open(path, "w"))
  f:write(s)
  f:close()
end

-- klab tasks --check on folders anywhere: the library passes; copies with
-- a broken reference, a broken shipped baseline, a baseline plan past the
-- block limit (the task's baseline, and a kernel shipped beside a library's), a cuDNN graph with a mode that does not exist, a cuBLASLt
-- matmul with a layout that does not exist and a wrong expected verdict
-- are each one line naming the file and the field, exit 2.
function T.tasks_check_finds_every_mistake(t)
  local q = require("klab.command").shell_quote
  local code, out, err = t.sh(("cd %s && %s tasks --check tasks"):format(q(t.root), q(t.klab)))
  t.eq(code, 0, out .. err)
  t.match(err, "no mistakes")
  local dir = t.tmpdir()
  -- Each copy in a folder of its own (a task name is taken from the first
  -- folder that has it).
  local function copy(fam, to) return copy_family(t, fam, dir .. "/" .. to) end
  local function edit(path, from, to) edit_once(t, path, from, to) end
  local r = copy("reduce", "r1")
  edit(r .. "/reference.cu", "extern \"C\"", "extern \"C\" this does not compile")
  local b = copy("reduce", "r2")
  edit(b .. "/baseline.cu", "extern \"C\"", "extern \"C\" nor does this")
  local p = copy("reduce", "r3")
  edit(p .. "/_family.lua", 'kernel = "reduce_mid_baseline", grid = { cdiv%(B %* D, 256%), 1, 1 }, block = { 256, 1, 1 }',
    'kernel = "reduce_mid_baseline", grid = { cdiv(B * D, 256), 1, 1 }, block = { 2048, 1, 1 }')
  local sp = copy("reduce", "r4")
  edit(sp .. "/_family.lua", 'kernel = "reduce_last_baseline", grid = { R, 1, 1 }, block = { 512, 1, 1 }',
    'kernel = "reduce_last_baseline", grid = { R, 1, 1 }, block = { 4096, 1, 1 }')
  local a = copy("activation", "a1")
  edit(a .. "/_family.lua", 'mode = "RELU_FWD"', 'mode = "RELU_FWDX"')
  edit(a .. "/bad/expected.lua", 'verdict = "incorrect"', 'verdict = "incorect"')
  local m = copy("matmul", "m1")
  edit(m .. "/_family.lua", 'nn = { a = "mk", b = "kn"', 'nn = { a = "mk", b = "qq"')
  local l = copy("activation", "a2")
  edit(l .. "/_family.lua", 'lib = "cudnn"', 'lib = "cudnnx"')
  for _, case in ipairs {
    { r, "r1/reduce/[%w_]+%.lua: reference: [%w_/x]+ on sm_90a: " },
    { b, "r2/reduce/[%w_]+%.lua: baseline: [%w_/x]+ on sm_90a: the shipped baseline does not build or plan" },
    { p, "r3/reduce/[%w_]+%.lua: baseline: [%w_/x]+ on sm_90a: the shipped baseline does not build or plan: .*2048" },
    { sp, "r4/reduce/sum_last%.lua: baseline%.shipped: sum_last_f32/[%dx]+ on sm_90a: the shipped baseline kernel does "
      .. "not build or plan: .*4096" },
    { a, "a1/activation/relu%.lua: baseline%.spec: relu_f32/[%dx]+: the cuDNN graph does not describe: .*RELU_FWDX" },
    { a, "a1/activation/bad/expected%.lua: verdict: entry %d+ %([%w_]+%): 'incorect' is not a verdict %(did you mean 'incorrect'%?%)" },
    { m, "m1/matmul/matmul_nn%.lua: baseline%.spec: matmul_nn_f32/[%dx]+: the cuBLASLt matmul does not describe: .*b_layout" },
    { l, "a2/activation/relu%.lua: baseline%.lib: relu_f32/[%dx]+: no baseline library 'cudnnx' %(did you mean 'cudnn'%?%)" },
  } do
    code, out, err = t.sh(("cd %s && %s tasks --check %s"):format(q(t.root), q(t.klab), q(case[1])))
    t.eq(code, 2, case[1] .. ": " .. out .. err)
    t.match(out, case[2])
    for line in out:gmatch("[^\n]+") do t.ok(line:find("^" .. dir:gsub("%p", "%%%0")), "one line naming the file: " .. line) end
  end
  code, out, err = t.sh(("%s tasks --check %s"):format(q(t.klab), q(dir .. "/nothing")))
  t.eq(code, 2)
  t.match(err, "no folder")
  -- klab eval says the same of a broken task instead of hiding it behind
  -- "GPU stages skipped" (exit 2: the task is the mistake).
  local sample = q(t.root .. "/tasks/reduce/bad/sum_mid_no_guard")
  code, out, err = t.sh(("cd %s && %s eval --tasks %s sum_mid_f32/7x333x129 %s"):format(q(t.root), q(t.klab),
    q(dir .. "/r2"), sample))
  t.eq(code, 2, out .. err)
  t.match(out, "baseline   broken: the task's baseline kernel %(.*r2/reduce/baseline%.cu%) does not compile")
  code, out, err = t.sh(("cd %s && %s eval --tasks %s sum_mid_f32/7x333x129 %s"):format(q(t.root), q(t.klab),
    q(dir .. "/r1"), sample))
  t.eq(code, 2, out .. err)
  t.match(out, "verdict    unknown: the task's reference %(.*r1/reduce/reference%.cu%) does not compile")
end

-- klab tasks --check DIR checks DIR's own tasks: an expected.lua entry names
-- a task of the folder being checked before any of the search path. A
-- family outside tasks/ with a task of a new name, and a copy of a library
-- family whose entries name a variant only the copy has, both pass (run
-- from elsewhere, as docs/tasks.md step 6 types it); --tasks is honoured.
function T.tasks_check_resolves_in_the_checked_folder(t)
  local q = require("klab.command").shell_quote
  local dir = t.tmpdir()
  t.eq((t.sh(("mkdir -p %s/mytasks %s/copy && cp -r %s %s/mytasks/act && cp -r %s %s/copy/activation"):format(
    q(dir), q(dir), q(t.root .. "/tasks/activation"), q(dir), q(t.root .. "/tasks/activation"), q(dir)))), 0)
  local function edit(path, from, to)
    local s = assert(t.read(path))
    local n
    s, n = s:gsub(from, to)
    t.ok(n >= 1, path .. ": " .. from)
    local f = assert(io.open(path, "w"))
    f:write(s)
    f:close()
  end
  -- A new name for every task of the family outside tasks/.
  edit(dir .. "/mytasks/act/_family.lua", "env%.name, env%.family, env%.kernel = t%.name",
    'env.name, env.family, env.kernel = "my_" .. t.name')
  for _, kind in ipairs { "samples", "bad" } do
    edit(dir .. "/mytasks/act/" .. kind .. "/expected.lua", 'task = "', 'task = "my_')
  end
  -- The copy's small variant is a shape the library does not have.
  edit(dir .. "/copy/activation/_family.lua", "R = 999, C = 1021", "R = 998, C = 1021")
  edit(dir .. "/copy/activation/bad/expected.lua", 'task = "relu_f32", verdict = "guard_violation",',
    'task = "relu_f32", variant = "998x1021", verdict = "guard_violation",')
  local function check(args, want, pattern)
    local code, out, err = t.sh(("cd %s && %s %s"):format(q(dir), q(t.klab), args))
    t.eq(code, want, args .. ": " .. out .. err)
    t.match(want == 0 and err or out, pattern, args)
  end
  for _, args in ipairs { "tasks --check mytasks", "tasks --check mytasks/act", "tasks --check copy",
    "tasks --check copy/activation", "tasks --tasks copy --check copy" } do
    check(args, 0, "no mistakes")
  end
  -- An entry naming a task of another folder is found through --tasks.
  edit(dir .. "/mytasks/act/bad/expected.lua", "\nreturn {", '\nreturn {\n  { name = "relu_vec4_no_tail", '
    .. 'task = "relu_f32", variant = "998x1021", verdict = "guard_violation" },')
  check("tasks --tasks copy --check mytasks", 0, "no mistakes")
  check("tasks --check mytasks", 2, "mytasks/act/bad/expected%.lua: task: entry 1 %(relu_vec4_no_tail%): no task "
    .. "'relu_f32/998x1021'")
  -- The copy's entry names its own variant: checked against the library's
  -- task of that name it is a mistake.
  edit(dir .. "/copy/activation/_family.lua", "R = 998, C = 1021", "R = 999, C = 1021")
  check("tasks --check copy", 2, "copy/activation/bad/expected%.lua: task: entry %d+ %(relu_vec4_no_tail%): no task "
    .. "'relu_f32/998x1021'")
end

-- docs/tasks.md is a reference for the fields of a task's `reference` and
-- of an expected.lua entry, not only an example: every field klab accepts
-- (as its own refusal of an unknown one lists them) is a row of the table
-- that follows "The fields of `reference`:" and of the one under expected.lua.
function T.docs_tasks_lists_every_reference_and_expected_field(t)
  local q = require("klab.command").shell_quote
  local fam = copy_family(t, "reduce", t.tmpdir() .. "/x")
  edit_once(t, fam .. "/_family.lua", 'return { source = "reference%.cu"', 'return { zzz = 1, source = "reference.cu"')
  edit_once(t, fam .. "/samples/expected.lua", '{ name = "naive_sum_last",', '{ zzz = 1, name = "naive_sum_last",')
  local code, out, err = t.sh(q(t.klab) .. " tasks --check " .. q(fam))
  err = out .. err
  t.eq(code, 2, err)
  local ref = err:match("field 'reference': unknown key 'zzz' %(allowed: ([^)]*)%)")
  local entry = err:match("unknown field 'zzz' %(fields: ([^)]*)%)")
  if not (t.ok(ref, "the reference's fields: " .. err) and t.ok(entry, "an entry's fields: " .. err)) then return end
  local doc = assert(t.read(t.root .. "/docs/tasks.md"))
  -- The rows of the first table after `marker`.
  local function rows(marker)
    local at = doc:find(marker, 1, true)
    if not t.ok(at, "docs/tasks.md says " .. marker) then return {} end
    local tbl = doc:match("\n(|[^\n]*|\n|[-|]+|\n.-)\n\n", at)
    local out = {}
    for name in (tbl or ""):gmatch("\n| `([%w_]+)` |") do out[name] = true end
    return out
  end
  local have = rows("The fields of `reference`:")
  for name in ref:gmatch("[%w_]+") do t.ok(have[name], "docs/tasks.md's reference table has " .. name) end
  have = rows("`expected.lua` runs in the task sandbox")
  for name in entry:gmatch("[%w_]+") do t.ok(have[name], "docs/tasks.md's expected.lua table has " .. name) end
end

return T
