-- klab.eval.sass: the SASS census of a candidate's cubin: static (through
-- nvdisasm or cuobjdump, no GPU needed) and, when asked, executed (SASS
-- metrics joined with the listing). What each target family counts is
-- klab.eval.profile.FAMILIES.
--
--   sass.static(cubin, targets)       -> sass table, listing, parse
--   sass.static_start(cubin, targets) -> finish() giving the sass table, the tool running meanwhile
--   sass.executed(stage, ctx, run, opts, text, census)  adds stage.sass.executed

local ok_c, C = pcall(require, "klab.prof")
if not ok_c then C = nil end
local FAMILIES = require("klab.eval.profile").FAMILIES

local M = {}

-- The static SASS census of a cubin through nvdisasm (or cuobjdump): the
-- opcode histogram and, per target family, how many instructions of it
-- the machine code holds. Needs no GPU. Returns the sass table
-- {available=, tool=, static={opcodes=, order=, rows=, functions=},
-- static_families={...}} or {available=false, reason=, code=}, then the
-- listing and its parse for the executed-histogram join (static).
local function census_of(text, tool, targets)
  local census = C.sass_parse(text)
  local sass = { available = true, tool = tool, static = { opcodes = census.opcodes, order = census.order,
    rows = census.rows, functions = census.functions }, static_families = {} }
  for _, name in ipairs(targets or {}) do
    local fam = FAMILIES[name]
    if fam then
      local n = 0
      for _, op in ipairs(fam.sass) do n = n + (census.opcodes[op] or 0) end
      sass.static_families[name] = n
    end
  end
  return sass, census
end

function M.static(cubin, targets)
  if not C then return { available = false, reason = "klab.prof is not available", code = "ENOLIB" } end
  local text, tool_or_err, code = C.disassemble(cubin)
  if not text then return { available = false, reason = tool_or_err, code = code } end
  local sass, census = census_of(text, tool_or_err, targets)
  return sass, text, census
end

-- The same with the disassembler running in the background (it takes
-- about half a second on a GEMM cubin): returns finish(), which waits for
-- it and returns the sass table. A finish never called kills the tool
-- when collected.
function M.static_start(cubin, targets)
  local d, err, code
  if C then
    d, err, code = C.disassemble_start(cubin)
  else
    err, code = "klab.prof is not available", "ENOLIB"
  end
  local done
  return function()
    if done then return done end
    if not d then
      done = { available = false, reason = err, code = code }
      return done
    end
    local text, tool_or_err, fcode = d:finish()
    d:free()
    if not text then
      done = { available = false, reason = tool_or_err, code = fcode }
    else
      done = census_of(text, tool_or_err, targets)
    end
    return done
  end
end

-- The executed histogram: one SASS-metrics pass over run(), its records
-- kept for the candidate's own functions and joined with the listing.
function M.executed(stage, ctx, run, opts, text, census)
  if not (opts.sass_executed and text and C) then return end
  if opts.prepare then
    local okp, perr = opts.prepare(1)
    if okp == nil or okp == false then
      stage.sass.executed_error = "prepare failed: " .. tostring(perr)
      return
    end
    local oks, serr = ctx:sync()
    if not oks then
      stage.sass.executed_error = "prepare failed: " .. tostring(serr)
      return
    end
  end
  local recs, err, code = C.sass_collect(ctx, run)
  if not recs then
    stage.sass.executed_error, stage.sass.executed_code = err, code
    return
  end
  -- Only the candidate's functions (other kernels, e.g. the judge's, may
  -- have been patched too).
  local mine = {}
  for _, f in ipairs(census.functions or {}) do mine[f] = true end
  local keep = {}
  for _, r in ipairs(recs) do
    if r.func == nil or mine[r.func] then keep[#keep + 1] = r end
  end
  local j, jerr = C.sass_join(text, keep)
  if not j then
    stage.sass.executed_error = jerr
    return
  end
  stage.sass.executed = { opcodes = j.opcodes, order = j.order, total = j.total, unmatched = j.unmatched,
    unmatched_count = j.unmatched_count, records = #recs }
end

return M
