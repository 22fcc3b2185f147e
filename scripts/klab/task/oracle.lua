-- klab.task.oracle: a task's semantics as one PyTorch expression over its
-- named buffers (the optional `oracle` field), independent of its CUDA
-- reference. tests/gpu/oracle_check.lua evaluates it with torch and
-- compares it with the reference under the task's tolerance: what makes a
-- KernelBench claim of `exact` a measurement.
--
--   oracle.check(v, c, fail)  -> {output name = expression} (schema; c: the
--                                checked fields: buffers, dim_order)
--   oracle.program(t)         -> the text of a Python program that reads the
--                                variant's inputs from the folder argv[1]
--                                (<name>.bin, raw), evaluates every output's
--                                expression in fp64 and writes oracle_<name>.bin
--                                in the output's dtype
--
-- An expression sees the input buffers (floats as float64, integers as
-- int64, bool as bool, with the buffer's shape), the dimensions (Python
-- integers), `torch` and `F` (torch.nn.functional), and names it binds
-- itself with `:=`. Its text is checked
-- token by token: no string literals, no name that starts with '_', no name
-- but those, keyword arguments and attributes, and none of the attributes
-- that reach files, processes or code (DENIED below); Python then evaluates
-- it with no builtins. A task file is data: its oracle cannot read the
-- host or run anything.
local M = {}

M.MAX_CHARS = 2000

-- Attributes an oracle may not name: files, serialization, code loading,
-- process-wide state and raw memory.
local DENIED = {}
for name in ([[load save hub utils ops classes from_file compile jit cuda backends library distributed
  multiprocessing package onnx export fx set_default_device set_default_dtype storage untyped_storage tofile
  numpy data_ptr share_memory_ manual_seed seed random set_printoptions autograd overrides testing profiler
  serialization register_hook apply_ map_ set_ resize_ fill_ copy_ cpu to pin_memory record_stream
  use_deterministic_algorithms set_num_threads func]]):gmatch("%S+") do DENIED[name] = true end

local KEYWORDS = { True = true, False = true, None = true, ["and"] = true, ["or"] = true, ["not"] = true,
  ["if"] = true, ["else"] = true }
local PY_RESERVED = {}
for name in ([[lambda import for in while def class exec eval global yield await async with as from del assert
  raise try except finally return pass break continue is nonlocal print open getattr setattr globals locals vars
  dir type object]]):gmatch("%S+") do PY_RESERVED[name] = true end

local OPERATORS = { ":=", "**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "@", "(", ")", "[", "]", ",", ":",
  ".", "<", ">", "=", "~", "&", "|" }

-- The tokens of expr: {kind = "name" | "number" | "op", text}; nil, why.
local function tokens(expr)
  local out, i, n = {}, 1, #expr
  while i <= n do
    local c = expr:sub(i, i)
    if c == " " then
      i = i + 1
    elseif c:match("[%a_]") then
      local j = i
      while j + 1 <= n and expr:sub(j + 1, j + 1):match("[%w_]") do j = j + 1 end
      out[#out + 1] = { kind = "name", text = expr:sub(i, j) }
      i = j + 1
    elseif c:match("%d") or (c == "." and expr:sub(i + 1, i + 1):match("%d")) then
      local j = i
      while j + 1 <= n and expr:sub(j + 1, j + 1):match("[%d%.]") do j = j + 1 end
      if expr:sub(j + 1, j + 1):match("[eE]") then
        j = j + 1
        if expr:sub(j + 1, j + 1):match("[%+%-]") then j = j + 1 end
        while j + 1 <= n and expr:sub(j + 1, j + 1):match("%d") do j = j + 1 end
      end
      out[#out + 1] = { kind = "number", text = expr:sub(i, j) }
      i = j + 1
    else
      local op
      for _, o in ipairs(OPERATORS) do
        if expr:sub(i, i + #o - 1) == o then
          op = o
          break
        end
      end
      if not op then return nil, ("character '%s' is not allowed (no strings, no newlines)"):format(c) end
      out[#out + 1] = { kind = "op", text = op }
      i = i + #op
    end
  end
  return out
end

-- nil when expr is a well-formed oracle over `names` (a set), else why.
function M.problem(expr, names)
  if type(expr) ~= "string" or not expr:find("%S") then return "must be a non-empty string" end
  if #expr > M.MAX_CHARS then return ("is longer than %d characters"):format(M.MAX_CHARS) end
  local toks, why = tokens(expr)
  if not toks then return why end
  local depth = 0
  -- Names the expression binds itself (`(h := F.linear(X, W, bias)) * 0.5 + h`).
  local bound = {}
  for k, tk in ipairs(toks) do
    if tk.kind == "name" and toks[k + 1] and toks[k + 1].text == ":=" then bound[tk.text] = true end
  end
  for k, tk in ipairs(toks) do
    if tk.text == "(" or tk.text == "[" then depth = depth + 1 end
    if tk.text == ")" or tk.text == "]" then depth = depth - 1 end
    if tk.kind == "name" then
      local name, prev, nxt = tk.text, toks[k - 1], toks[k + 1]
      if name:sub(1, 1) == "_" then return ("'%s': names may not start with '_'"):format(name) end
      if PY_RESERVED[name] then return ("'%s' is not allowed"):format(name) end
      if prev and prev.text == "." then
        if DENIED[name] then return ("the attribute '%s' is not allowed"):format(name) end
      elseif nxt and nxt.text == "=" and depth > 0 then
        -- a keyword argument
      elseif not (names[name] or KEYWORDS[name] or bound[name]) then
        local known = {}
        for x in pairs(names) do known[#known + 1] = x end
        table.sort(known)
        return ("unknown name '%s'%s (an oracle sees %s)"):format(name,
          require("klab.errors").did_you_mean(name, known), table.concat(known, ", "))
      end
    end
  end
  if depth ~= 0 then return "unbalanced brackets" end
  return nil
end

-- Checks a task file's `oracle` field; fail(path, message) raises.
function M.check(v, c, fail)
  if v == nil then return nil end
  local names, outputs = { torch = true, F = true }, {}
  for _, d in ipairs(c.dim_order) do names[d] = true end
  for _, bname in ipairs(c.buffer_order) do
    local b = c.buffers[bname]
    if b.role == "input" then names[bname] = true end
    if b.role == "output" then outputs[#outputs + 1] = bname end
  end
  local exprs = {}
  if type(v) == "string" then
    if #outputs ~= 1 then
      fail("oracle", ("the task has %d outputs: give { %s = \"...\", ... }"):format(#outputs,
        table.concat(outputs, " = \"...\", ")))
    end
    exprs[outputs[1]] = v
  elseif type(v) == "table" then
    for k in pairs(v) do
      if type(k) ~= "string" or not c.buffers[k] or c.buffers[k].role ~= "output" then
        fail("oracle", ("'%s' is not an output of the task (outputs: %s)"):format(tostring(k),
          table.concat(outputs, ", ")))
      end
    end
    for _, o in ipairs(outputs) do
      if v[o] == nil then fail("oracle." .. o, "is missing: every output needs its expression") end
      exprs[o] = v[o]
    end
  else
    fail("oracle", "must be a PyTorch expression (a string) or { output = expression }")
  end
  for o, e in pairs(exprs) do
    local why = M.problem(e, names)
    if why then fail(type(v) == "string" and "oracle" or ("oracle." .. o), why) end
  end
  return exprs
end

-- torch's name of each element type, and how the oracle sees it.
local TORCH = {
  f64 = { "float64", "float" }, f32 = { "float32", "float" }, f16 = { "float16", "float" },
  bf16 = { "bfloat16", "float" }, tf32 = { "float32", "float" }, i8 = { "int8", "int" }, u8 = { "uint8", "int" },
  i16 = { "int16", "int" }, i32 = { "int32", "int" }, i64 = { "int64", "int" }, bool = { "bool", "bool" },
}

local function list(t)
  local s = {}
  for i, x in ipairs(t) do s[i] = tostring(math.tointeger(x) or x) end
  return "(" .. table.concat(s, ", ") .. (#s == 1 and ",)" or ")")
end

-- The Python program of task t (one variant) for its oracle; nil, why for a
-- task without one or with a buffer torch cannot read.
function M.program(t)
  if not t.oracle then return nil, t.name .. " has no oracle" end
  local lines = {
    "import os, sys",
    "import torch",
    "import torch.nn.functional as F",
    "folder = sys.argv[1]",
    "dev = 'cuda' if torch.cuda.is_available() else 'cpu'",
    "torch.backends.cuda.matmul.allow_tf32 = False",
    "torch.backends.cudnn.allow_tf32 = False",
    "def load(name, dtype, shape, kind):",
    "    n = 1",
    "    for s in shape:",
    "        n *= s",
    "    x = torch.from_file(os.path.join(folder, name + '.bin'), shared=False, size=n, dtype=dtype)",
    "    x = x.reshape(shape).to(dev)",
    "    return x.double() if kind == 'float' else (x if kind == 'bool' else x.long())",
    "def save(name, value, dtype, shape):",
    "    v = torch.as_tensor(value).to(dev)",
    "    n = 1",
    "    for s in shape:",
    "        n *= s",
    "    if v.numel() != n:",
    "        raise SystemExit('oracle of %s: %d elements, the output has %d' % (name, v.numel(), n))",
    "    v = v.reshape(-1).to(dtype).contiguous().cpu()",
    "    v.view(torch.uint8).numpy().tofile(os.path.join(folder, 'oracle_' + name + '.bin'))",
    "scope = {'torch': torch, 'F': F}",
  }
  for _, d in ipairs(t.dim_order) do lines[#lines + 1] = ("scope[%q] = %d"):format(d, t.dims[d]) end
  local outs = {}
  for _, name in ipairs(t.buffer_order) do
    local b = t.buffers[name]
    local ty = TORCH[b.dtype]
    if b.role ~= "scratch" and not ty then return nil, ("%s: torch cannot read %s's %s"):format(t.name, name, b.dtype) end
    if b.role == "input" then
      lines[#lines + 1] = ("scope[%q] = load(%q, torch.%s, %s, %q)"):format(name, name, ty[1], list(b.shape), ty[2])
    elseif b.role == "output" then
      outs[#outs + 1] = name
    end
  end
  for _, name in ipairs(outs) do
    local b = t.buffers[name]
    -- The expression was checked (M.problem): no quote, no backslash, one line.
    lines[#lines + 1] = ("save(%q, eval('%s', {'__builtins__': {}}, scope), torch.%s, %s)"):format(name,
      t.oracle[name], TORCH[b.dtype][1], list(b.shape))
  end
  return table.concat(lines, "\n") .. "\n"
end

return M
