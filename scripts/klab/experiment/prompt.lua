-- klab.experiment.prompt: prompt templates, knowledge packs and feedback messages.
--
--   prompt.root()                       -> the prompts folder (KLAB_PROMPTS, ./prompts, or next to tasks/)
--   prompt.read(name [, root])          -> text of <root>/<name>; raises when missing
--   prompt.render(text, vars [, where]) -> text with ${name} replaced; an unknown name raises
--   prompt.pack(tag [, root])           -> text of the knowledge packs of a tag, list of files
--   prompt.describe(group)              -> the model-facing text of a task or task group
--   prompt.messages(opts)               -> {{role="system", content=}, {role="user", content=}}
--   prompt.language_file(language)      -> "languages/NAME.md", a language's variant (klab.experiment.languages)
--   prompt.feedback(turn, opts)         -> the feedback message after a turn (PTXBench style)
--   prompt.status(verdict)              -> PTXBench's status word for a verdict ("COMPILE_ERROR", ...)
--
-- Templates are files under prompts/ with ${name} variables; "$${" writes a
-- literal "${". A tag names knowledge packs: "hopper+warp_specialization"
-- attaches prompts/packs/hopper.md then prompts/packs/warp_specialization.md
-- (the way PTXBench's prompt tags attach architecture notes and one
-- pattern); the parts "none" and "no-hint" attach nothing.

local verdicts = require "klab.eval.verdict"

local M = {}

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

local function is_dir(path) return exists(path .. "/.") end

function M.root()
  local env = os.getenv("KLAB_PROMPTS")
  if env and env ~= "" then return env end
  if is_dir("prompts") then return "prompts" end
  local tasks = require("klab.task").default_root()
  local dir = tasks:match("^(.*)/tasks/?$")
  if dir and is_dir(dir .. "/prompts") then return dir .. "/prompts" end
  return "prompts"
end

function M.read(name, root)
  root = root or M.root()
  local path = name:sub(1, 1) == "/" and name or (root .. "/" .. name)
  local f = io.open(path, "rb")
  -- A name is read in the prompts folder, not beside the caller: say so
  -- and how to read one from elsewhere.
  if not f then
    error(("prompt: no template %s (looked in %s; a template's name is read in the prompts folder: put it there, "
      .. "set prompt.root (klab prompt --root DIR) to a copy of that folder that holds it, or give its absolute path)")
      :format(name, root), 2)
  end
  local s = f:read("a")
  f:close()
  return s
end

-- ${name} -> vars[name]; names are identifiers with dots ("task.name").
function M.render(text, vars, where)
  vars = vars or {}
  local missing
  local out = text:gsub("(%$?)%${([%w_%.]+)}", function(esc, name)
    if esc == "$" then return "${" .. name .. "}" end
    local v = vars[name]
    if v == nil then
      missing = missing or name
      return ""
    end
    return tostring(v)
  end)
  if missing then
    local names = {}
    for k in pairs(vars) do names[#names + 1] = k end
    table.sort(names)
    error(("prompt: unknown variable ${%s}%s (known: %s)"):format(missing, where and (" in " .. where) or "",
      table.concat(names, ", ")), 2)
  end
  return out
end

local NO_PACK = { [""] = true, none = true, ["no-hint"] = true, ["no_hint"] = true }

-- The packs of one tag, concatenated in order, and the files read.
function M.pack(tag, root)
  root = root or M.root()
  local texts, files = {}, {}
  for part in tostring(tag or ""):gmatch("[^+]+") do
    local name = part:gsub("^%s+", ""):gsub("%s+$", "")
    -- "hopper-no-hint" attaches the hopper pack and no pattern.
    local base = name:gsub("%-no%-hint$", "")
    if not NO_PACK[name] and not NO_PACK[base] then
      local path = root .. "/packs/" .. base .. ".md"
      if not exists(path) then
        error(("prompt: tag '%s' needs the knowledge pack %s, which does not exist"):format(tag, path), 2)
      end
      local f = assert(io.open(path, "rb"))
      texts[#texts + 1] = f:read("a")
      f:close()
      files[#files + 1] = path
    end
  end
  return table.concat(texts, "\n\n"), files
end

-- A task group is {name=, workloads={task names}} (a single task is a group
-- of one). The description is the first workload's, with the list of
-- workloads the kernel is evaluated on.
function M.describe(group)
  local task = require("klab.task")
  local first = task.get(group.workloads[1])
  local text = task.describe(first)
  if #group.workloads > 1 then
    local lines = { text, "", "The kernel is evaluated on every one of these workloads (the dimensions above are "
      .. "the first; your code must handle each):" }
    for _, w in ipairs(group.workloads) do
      local t = task.get(w)
      local dims = {}
      for _, d in ipairs(t.dim_order) do dims[#dims + 1] = d .. "=" .. t.dims[d] end
      lines[#lines + 1] = "  " .. table.concat(dims, ", ")
    end
    text = table.concat(lines, "\n")
  end
  return text
end

-- The name of a language's prompt variant in the prompts folder: what the
-- model is told to write, in which block, and its launch conventions
-- (${language_rules} in a template). Raises for a language klab does not know.
function M.language_file(language)
  local l, why = require("klab.experiment.languages").get(language)
  if not l then error("prompt: " .. why, 3) end
  return "languages/" .. l.name .. ".md"
end

-- opts: {group=, tag=, arch=, language="cuda", system="system.md", user="task.md", vars={}, root=}
function M.messages(opts)
  local root = opts.root or M.root()
  local pack = M.pack(opts.tag, root)
  local language = opts.language or require("klab.experiment.languages").DEFAULT
  local vars = {
    arch = opts.arch or "sm_90a",
    knowledge = pack ~= "" and ("Reference material:\n\n" .. pack) or "",
    task = M.describe(opts.group),
    task_name = opts.group.name,
    tag = opts.tag or "",
    language = language,
  }
  for k, v in pairs(require("klab.experiment.languages").vars()) do vars[k] = v end
  local sys_name, user_name = opts.system or "system.md", opts.user or "task.md"
  local sys_text = sys_name ~= false and M.read(sys_name, root) or nil
  local user_text = M.read(user_name, root)
  -- The language's variant, read only where a template uses it (a template
  -- of one's own need not).
  local file = M.language_file(language)
  if (sys_text or ""):find("${language_rules}", 1, true) or user_text:find("${language_rules}", 1, true) then
    vars.language_rules = (M.render(M.read(file, root), vars, file):gsub("\n$", ""))
  end
  for k, v in pairs(opts.vars or {}) do vars[k] = v end
  local msgs = {}
  if sys_text then
    msgs[#msgs + 1] = { role = "system", content = M.render(sys_text, vars, sys_name) }
  end
  msgs[#msgs + 1] = { role = "user", content = M.render(user_text, vars, user_name) }
  return msgs
end

-- ---- feedback -----------------------------------------------------------

local STATUS = {
  passed = "PASSED", compile_error = "COMPILE_ERROR", runtime_error = "RUNTIME_ERROR", timeout = "TIMEOUT",
  incorrect = "INCORRECT_NUMERICAL", extraction_error = "EXTRACTION_ERROR", plan_error = "PLAN_ERROR",
  load_error = "LOAD_ERROR", guard_violation = "GUARD_VIOLATION", input_modified = "INPUT_MODIFIED",
  nondeterministic = "NONDETERMINISTIC", unexpected_launches = "UNEXPECTED_LAUNCHES",
  target_not_executed = "TARGET_NOT_EXECUTED", unknown = "NOT_EVALUATED", request_error = "REQUEST_ERROR",
}

function M.status(v) return STATUS[v] or tostring(v):upper() end

local function fmt(x, d)
  if type(x) ~= "number" then return "?" end
  return (("%." .. (d or 3) .. "f"):format(x))
end

local function strip_name(reason, v)
  reason = tostring(reason or "")
  return (reason:gsub("^" .. v:gsub("%p", "%%%0") .. ":%s*", ""))
end

local function tail_lines(s, n)
  local lines = {}
  for l in tostring(s):gmatch("[^\n]*") do lines[#lines + 1] = l end
  while #lines > 0 and lines[#lines] == "" do lines[#lines] = nil end
  if #lines <= n then return table.concat(lines, "\n") end
  local out = { ("... (%d earlier lines left out)"):format(#lines - n) }
  for i = #lines - n + 1, #lines do out[#out + 1] = lines[i] end
  return table.concat(out, "\n")
end

local INSTRUCTION_WARNING = "INSTRUCTION WARNING: the kernel might not be fully exercising the specialized "
  .. "hardware units. Please try these instructions: "

-- turn: {verdict=, reason=, workloads={{name=, axes=, verdict=, reason=, speedup=, time_ms=, baseline_ms=,
--         max_abs=, max_rel=, instructions=, profile=}}, compile_log=, targets={...}}
-- opts: {turn=, turns=, target=, profile=true|false, profile_after=n, compile_log=true, template=,
--        template_text= (the template's text itself, as a study stored it: no file is read)}
function M.feedback(turn, opts)
  opts = opts or {}
  local out = {}
  if verdicts.no_candidate(turn.verdict) then
    out[#out + 1] = M.status(turn.verdict) .. " — " .. strip_name(turn.reason, turn.verdict)
  else
    local warn_families
    for _, w in ipairs(turn.workloads or {}) do
      local head = w.axes and ("[" .. w.axes .. "] ") or ""
      if verdicts.passed(w.verdict) then
        out[#out + 1] = head .. ("PASSED — speedup: %sx (kernel: %s ms, ref: %s ms)"):format(fmt(w.speedup),
          fmt(w.time_ms, 4), fmt(w.baseline_ms, 4))
      else
        local line = head .. M.status(w.verdict)
        if w.max_abs or w.max_rel then
          line = line .. (" — max_abs_error: %s, max_rel_error: %s"):format(
            w.max_abs and ("%.4g"):format(w.max_abs) or "?", w.max_rel and ("%.4g"):format(w.max_rel) or "?")
        end
        out[#out + 1] = line .. (w.max_abs and "" or (" — " .. strip_name(w.reason, w.verdict)))
        if w.max_abs then out[#out + 1] = "    " .. strip_name(w.reason, w.verdict) end
      end
      local ins = w.instructions
      if ins and (verdicts.target_missing(w.verdict) or ins.status == "not_executed") then
        warn_families = ins.missing or ins.required or turn.targets
      elseif verdicts.target_missing(w.verdict) then
        warn_families = turn.targets
      end
    end
    if opts.compile_log ~= false and turn.compile_log and turn.compile_log:find("%S") then
      out[#out + 1] = ""
      out[#out + 1] = "Compiler log:"
      out[#out + 1] = tail_lines(turn.compile_log, opts.log_lines or 40)
    end
    if warn_families then
      out[#out + 1] = ""
      out[#out + 1] = INSTRUCTION_WARNING .. table.concat(warn_families, ", ")
    end
    local show_profile = opts.profile and (turn.turn or opts.turn or 1) > (opts.profile_after or 0)
    if show_profile then
      for _, w in ipairs(turn.workloads or {}) do
        if w.profile and w.profile:find("%S") then
          out[#out + 1] = ""
          out[#out + 1] = "Profile" .. (w.axes and (" [" .. w.axes .. "]") or "") .. ":"
          out[#out + 1] = w.profile
        end
      end
    end
  end
  local body = table.concat(out, "\n")
  if opts.template then
    local vars = {
      results = body, turn = opts.turn or turn.turn or 1, turns = opts.turns or "?",
      turns_left = opts.turns and ((opts.turns) - (opts.turn or turn.turn or 1)) or "?",
      target = opts.target and fmt(opts.target, 2) or "-",
      target_line = opts.target and ("\nTarget: a speedup of at least %sx on every workload.\n"):format(fmt(opts.target, 2))
        or "",
    }
    body = M.render(opts.template_text or M.read(opts.template, opts.root), vars, opts.template)
  end
  return body
end

return M
