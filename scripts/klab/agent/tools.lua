-- klab.agent.tools: the tools klab gives an agent, each a name, a
-- description, a JSON schema of its arguments and a body. `klab mcp`
-- serves them to coding agents (klab.agent.mcp); the same table is what a
-- tool-calling study would offer a model through a provider's API.
--
--   tools.LIST                      {{name=, description=, schema=, gpu=, run=}, ...} in order
--   tools.get(name)                 -> the tool | nil
--   tools.context{root=, arch=, deadline=} -> ctx (its evaluation session is
--                                      opened on first use; ctx:close())
--   tools.call(ctx, name, args)     -> data | nil, why
--   tools.compile_record(c, arch), tools.run_record(ctx, t, c, arch), tools.profile_record(ctx, t, c, arch),
--   tools.smallest_variant(name), tools.smallest(descriptors), tools.no_gpu(ctx)
--                                   the bodies, for a candidate and task already found
--                                   (klab.agent.study gives a model the same tools)
--
-- data is a plain table (a record, as `klab eval --json` or `klab compile
-- --json` prints it); why is one line for the agent: a tool error, never a
-- traceback and never a klab file name. A tool error is what the agent
-- asked for that cannot be done (an unknown task, a candidate the rules
-- refuse, no GPU for a tool that needs one); a candidate that fails (a
-- compile error, a wrong result) is an answer, not a tool error.
--
-- What an agent reaches: task names on klab's task search path (a name is
-- never a path: klab.task.is_name) and candidate folders inside the
-- workspace (klab.agent.folder). No tool runs a command or reads anything
-- else.

local task = require "klab.task"
local folder = require "klab.agent.folder"
local args_mod = require "klab.agent.args"
local verdicts = require "klab.eval.verdict"
local errors = require "klab.errors"

local M = {}

-- ---- arguments shared by the tools -----------------------------------------

local TASK = { type = "string", maxLength = 200,
  description = "a task name as list_tasks gives it (gemm_bf16/4096x4096x4096), or a task's base name (gemm_bf16)" }
local CANDIDATE = { type = "string", maxLength = folder.MAX_PATH,
  description = "the candidate: a folder inside the workspace holding kernel.cu or kernel.ptx and optionally "
    .. "plan.lua (a path relative to the workspace), or one .cu/.ptx file there" }
local ARCH = { type = "string", maxLength = 32,
  description = "the compile target, for example sm_90a or sm_100a (default: the server's)" }

local function object(props, required)
  return { type = "object", properties = props, required = required, additionalProperties = false }
end

-- ---- helpers -----------------------------------------------------------------

-- A library error as one line for the agent: no klab file and line.
local function line(e)
  if errors.is(e) then e = e.message end
  return (tostring(e):gsub("^[%w_/%.%-]+:%d+: ", ""):gsub("^task%.[%a_]+: ", ""):gsub("[\r\n]+", " "))
end

-- The descriptor of a task name, or nil, why. A base name with several
-- variants gives its smallest (the fewest bytes moved, then the fewest
-- FLOPs) when smallest is set, else why a variant must be named.
local function find_task(name, smallest)
  if not task.is_name(name) then return nil, task.not_a_name(name) end
  local ok, d = pcall(task.load, name)
  if not ok then return nil, task.hint(line(d)) end
  if d.kind == "task" then return d end
  if #d.tasks == 1 then return d.tasks[1] end
  if not smallest then
    local names = {}
    for i, t in ipairs(d.tasks) do names[i] = t.name end
    return nil, ("task '%s' has %d variants; name one (%s)"):format(name, #d.tasks, table.concat(names, ", "))
  end
  return M.smallest(d.tasks)
end

-- The smallest of a list of task descriptors: the fewest bytes moved, then
-- the fewest FLOPs.
function M.smallest(list)
  local best
  for _, t in ipairs(list) do
    if not best or t.bytes < best.bytes or (t.bytes == best.bytes and t.flops < best.flops) then best = t end
  end
  return best
end

-- The smallest variant of name's base: what run and profile use.
function M.smallest_variant(name)
  if type(name) == "string" then name = name:match("^([^/]+)") or name end
  return find_task(name, true)
end

local function arch_of(ctx, a)
  local arch = a.arch or ctx.arch
  local ok, why = require("klab.jit").check_arch(arch)
  if not ok then return nil, "arch: " .. line(why) end
  return arch
end

-- nil, or why the GPU tools cannot run here (ctx:session(): an evaluation session).
function M.no_gpu(ctx)
  local m = ctx:session():machine()
  if m.none then
    return ("no GPU here (%s): run, profile and evaluate need one; compile and describe_task work without"):format(
      line(m.none))
  end
end

-- The task, candidate and target of a tool that evaluates, or nil, why.
local function evaluation_inputs(ctx, a, smallest)
  local t, why = (smallest and M.smallest_variant or find_task)(a.task)
  if not t then return nil, why end
  local c
  c, why = folder.candidate(ctx.root, a.candidate)
  if not c then return nil, why end
  local arch
  arch, why = arch_of(ctx, a)
  if not arch then return nil, why end
  why = M.no_gpu(ctx)
  if why then return nil, why end
  return t, c, arch
end

-- An evaluation's result, or nil, why when nothing could be measured (the
-- judge's own failure or a stage that could not run: a tool error).
local function evaluated(ctx, t, c, arch, opts)
  opts.arch = arch
  local r, why = ctx:session():evaluate(t, c, opts)
  if not r then return nil, line(why) end
  return r
end

-- ---- the tools ---------------------------------------------------------------

local function list_tasks(_, a)
  local all, errs = task.list()
  local out = {}
  for _, t in ipairs(all) do
    local tagged = not a.tag
    for _, x in ipairs(t.tags) do if x == a.tag then tagged = true end end
    if tagged and (not a.family or t.family == a.family) then
      local dims = {}
      for _, d in ipairs(t.dim_order) do dims[#dims + 1] = d .. "=" .. t.dims[d] end
      out[#out + 1] = { name = t.name, family = t.family, shape = table.concat(dims, " "), flops = t.flops,
        tags = task.plain(t.tags) }
    end
  end
  return { tasks = out, count = #out, unreadable_task_files = #errs }
end

local function describe_task(_, a)
  local t, why = find_task(a.task, true)
  if not t then return nil, why end
  local rec = require("klab.task.record").of(t)
  local d = task.load(t.base)
  rec.variants = {}
  for i, v in ipairs(d.tasks) do rec.variants[i] = v.name end
  rec.model_text = task.describe(t)
  return rec
end

-- The record `klab compile --json` prints for candidate c (without the
-- cubin's bytes), or nil, why when the compiler cannot run here.
function M.compile_record(c, arch)
  local r, msg, code, partial = require("klab.jit").compile { source = c.code, lang = c.lang, arch = arch,
    name = c.file or c.name }
  if code == "EUNSUPPORTED" then return nil, line(msg) end
  local out = {}
  for k, v in pairs(r or partial or {}) do
    if k ~= "cubin" then out[k] = v end
  end
  if r and r.cubin then out.cubin_size = #r.cubin end
  out.file, out.ok = c.file, r ~= nil
  if not r then out.error, out.code = line(msg), code end
  return out
end

local function compile(ctx, a)
  local c, why = folder.candidate(ctx.root, a.candidate)
  if not c then return nil, why end
  local arch
  arch, why = arch_of(ctx, a)
  if not arch then return nil, why end
  return M.compile_record(c, arch)
end

-- What run answers for candidate c on task t (a descriptor), or nil, why.
function M.run_record(ctx, t, c, arch)
  local r, why = evaluated(ctx, t, c, arch, { timing = false })
  if not r then return nil, why end
  if not verdicts.measured(r.verdict) then return nil, line(r.reason) end
  local corr = r.stages.correctness
  return { task = r.task, verdict = r.verdict, correct = verdicts.correct(r.verdict), reason = r.reason,
    trials = corr and corr.trials and #corr.trials or nil, outputs = corr and corr.outputs or nil, seed = r.seed }
end


-- What profile answers for candidate c on task t, or nil, why.
function M.profile_record(ctx, t, c, arch)
  local r, why = evaluated(ctx, t, c, arch, { timing = false, profile = true })
  if not r then return nil, why end
  if not verdicts.measured(r.verdict) then return nil, line(r.reason) end
  local ps = r.stages.instructions
  if not ps then
    return { task = r.task, verdict = r.verdict, reason = r.reason,
      profile_text = "no profile: the candidate stopped before the instruction stage" }
  end
  return { task = r.task, verdict = r.verdict, reason = r.reason, profile_text = ps.text, profile = ps.profile,
    status = ps.status }
end


local function evaluate_record(ctx, t, c, arch, a)
  local r, why = evaluated(ctx, t, c, arch, { timing = a.timing ~= false })
  if not r then return nil, why end
  if not verdicts.measured(r.verdict) then return nil, line(r.reason) end
  return r
end

-- A tool that evaluates: its arguments' task (its smallest variant when
-- smallest), candidate and target found, then body(ctx, t, c, arch, args).
local function evaluating(body, smallest)
  return function(ctx, a)
    local t, c, arch = evaluation_inputs(ctx, a, smallest)
    if not t then return nil, c end
    return body(ctx, t, c, arch, a)
  end
end
local run, profile, evaluate = evaluating(M.run_record, true), evaluating(M.profile_record, true),
  evaluating(evaluate_record, false)

M.LIST = {
  { name = "list_tasks", run = list_tasks,
    description = "List klab's tasks: name, family, shape, FLOPs and tags of every variant.",
    schema = object({
      family = { type = "string", maxLength = 100, description = "only tasks of this family (gemm, softmax, ...)" },
      tag = { type = "string", maxLength = 100, description = "only tasks carrying this tag (small, ptxbench, ...)" },
    }) },
  { name = "describe_task", run = describe_task,
    description = "Describe a task: the text a model reads, its buffers (dtype, shape, layout), dimensions, "
      .. "tolerances, target instructions, default launch plan and variants. A base name gives its smallest variant.",
    schema = object({ task = TASK }, { "task" }) },
  { name = "compile", run = compile,
    description = "Compile a candidate's device code for a target without running it: per kernel the registers, "
      .. "spills, shared memory and stack; the census of PTX instruction families; the compiler log and errors.",
    schema = object({ candidate = CANDIDATE, arch = ARCH }, { "candidate" }) },
  { name = "run", run = run, gpu = true,
    description = "Run a candidate once on the smallest variant of a task (GPU): correct or not, with the worst "
      .. "element when wrong. No timing.",
    schema = object({ task = TASK, candidate = CANDIDATE, arch = ARCH }, { "task", "candidate" }) },
  { name = "profile", run = profile, gpu = true,
    description = "Profile a candidate on the smallest variant of a task (GPU): the compact profile of the "
      .. "instruction stage (which target instruction families executed, FLOPs by path, memory figures, signals).",
    schema = object({ task = TASK, candidate = CANDIDATE, arch = ARCH }, { "task", "candidate" }) },
  { name = "evaluate", run = evaluate, gpu = true,
    description = "Evaluate a candidate on one task variant as `klab eval --json` does (GPU): the verdict and its "
      .. "reason, every stage's record, the timing against the library baseline and the speedup.",
    schema = object({ task = TASK, candidate = CANDIDATE, arch = ARCH,
      timing = { type = "boolean", description = "time the candidate against the baseline (default true)" } },
      { "task", "candidate" }) },
}

local BY = {}
for _, t in ipairs(M.LIST) do BY[t.name] = t end

function M.get(name) return BY[name] end

-- ---- the context ---------------------------------------------------------------

local Ctx = {}
Ctx.__index = Ctx

function Ctx:session()
  if not self._session then
    self._session = require("klab.eval").session { deadline = self.deadline, cpu = 0 }
  end
  return self._session
end

function Ctx:close()
  if self._session then self._session:close() end
  self._session = nil
end
Ctx.__close = Ctx.close

-- opts: root (the workspace folder, required), arch ["sm_90a"], deadline
-- (seconds per evaluation). nil, why when root is no folder.
function M.context(opts)
  local root, why = folder.root(opts.root)
  if not root then return nil, why end
  return setmetatable({ root = root, arch = opts.arch or "sm_90a", deadline = opts.deadline }, Ctx)
end

function M.call(ctx, name, raw)
  local tool = BY[name]
  if not tool then return nil, ("no tool '%s'"):format(tostring(name)) end
  local a, why = args_mod.check(tool.schema, raw)
  if not a then return nil, why end
  return tool.run(ctx, a)
end

return M
