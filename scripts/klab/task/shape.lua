-- klab.task.shape: element types and shape expressions shared by tasks and plans.
--
--   shape.dtype(name)          -> {name=, bits=, bytes=, float=, signed=} or nil, message
--   shape.dtypes               canonical name -> info (read-only by convention)
--   shape.eval(expr, dims)     -> integer or nil, message
--        expr: an integer, or a string such as "M", "M*K", "cdiv(N, 128)*2",
--        "(M+63)//64"; operators + - * // % and / (exact division only),
--        parentheses, functions cdiv, min, max; names are looked up in dims.
--        Nothing is ever passed to load(): the text is parsed here.
--   shape.expand(shape, dims)  -> list of integers or nil, message
--        shape: a list of expressions ({"M", "K"}) or one expression ("M*K")
--   shape.bytes(dtype, elems)  -> bytes of elems elements (sub-byte types round up)
--   shape.numel(list)          -> product of the list
--   shape.MAX_ELEMENTS         the most elements a buffer may have: 2^40 (8 TiB of
--                              f64), far above any GPU's memory; expand refuses more
--
-- Arithmetic is checked: a value past 2^62 in magnitude is an error, never a
-- wrapped integer (dimensions of 2^32 must not multiply to 0).

local M = {}

M.MAX_ELEMENTS = 1 << 40
local MAX_VALUE = 1 << 62

-- bits per element; float types carry their exponent/mantissa split only
-- where it matters to tolerances (see tasks).
local DT = {
  bf16 = { bits = 16, float = true },
  f16 = { bits = 16, float = true },
  f32 = { bits = 32, float = true },
  f64 = { bits = 64, float = true },
  tf32 = { bits = 32, float = true }, -- stored as f32
  fp8e4m3 = { bits = 8, float = true },
  fp8e5m2 = { bits = 8, float = true },
  fp4e2m1 = { bits = 4, float = true },
  i8 = { bits = 8, signed = true },
  u8 = { bits = 8 },
  i16 = { bits = 16, signed = true },
  u16 = { bits = 16 },
  i32 = { bits = 32, signed = true },
  u32 = { bits = 32 },
  i64 = { bits = 64, signed = true },
  u64 = { bits = 64 },
  bool = { bits = 8 },
}

local ALIAS = {
  bfloat16 = "bf16", fp16 = "f16", half = "f16", float16 = "f16",
  fp32 = "f32", float = "f32", float32 = "f32",
  fp64 = "f64", double = "f64", float64 = "f64",
  e4m3 = "fp8e4m3", fp8_e4m3 = "fp8e4m3", float8_e4m3fn = "fp8e4m3",
  e5m2 = "fp8e5m2", fp8_e5m2 = "fp8e5m2", float8_e5m2 = "fp8e5m2",
  e2m1 = "fp4e2m1", fp4 = "fp4e2m1",
  int8 = "i8", uint8 = "u8", int16 = "i16", uint16 = "u16",
  int32 = "i32", uint32 = "u32", int64 = "i64", uint64 = "u64",
}

M.dtypes = {}
for name, d in pairs(DT) do
  M.dtypes[name] = {
    name = name, bits = d.bits, bytes = d.bits / 8, float = d.float or false,
    signed = d.signed or d.float or false,
  }
end

function M.dtype(name)
  if type(name) ~= "string" then return nil, "a dtype must be a string, got " .. type(name) end
  local canon = ALIAS[name] or name
  local d = M.dtypes[canon]
  if not d then
    local known = {}
    for k in pairs(M.dtypes) do known[#known + 1] = k end
    table.sort(known)
    return nil, ("unknown dtype '%s' (known: %s)"):format(name, table.concat(known, ", "))
  end
  return d
end

function M.bytes(dtype, elems)
  local d = assert(M.dtype(dtype))
  return (elems * d.bits + 7) // 8
end

function M.numel(list)
  local n = 1
  for _, v in ipairs(list) do n = n * v end
  return n
end

-- ---- expressions -------------------------------------------------------

-- Tokens: integers, names, operators, parentheses, commas.
local function tokenize(s)
  local toks, i, n = {}, 1, #s
  while i <= n do
    local c = s:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif c:match("%d") then
      local j = i
      while j <= n and s:sub(j, j):match("[%d_]") do j = j + 1 end
      local digits = s:sub(i, j - 1):gsub("_", "")
      local v = #digits <= 18 and math.tointeger(tonumber(digits))
      if not v then return nil, ("bad number '%s' (at most 18 digits)"):format(s:sub(i, j - 1)) end
      toks[#toks + 1] = { k = "num", v = v }
      i = j
    elseif c:match("[%a_]") then
      local j = i
      while j <= n and s:sub(j, j):match("[%w_]") do j = j + 1 end
      toks[#toks + 1] = { k = "name", v = s:sub(i, j - 1) }
      i = j
    elseif s:sub(i, i + 1) == "//" then
      toks[#toks + 1] = { k = "op", v = "//" }
      i = i + 2
    elseif c:match("[%+%-%*/%%%(%),]") then
      toks[#toks + 1] = { k = "op", v = c }
      i = i + 1
    else
      return nil, ("unexpected character '%s'"):format(c)
    end
  end
  return toks
end

local FUNCS = {
  cdiv = { 2, function(a, b)
    if b == 0 then return nil, "cdiv by zero" end
    return -((-a) // b)
  end },
  min = { 2, function(a, b) return math.min(a, b) end },
  max = { 2, function(a, b) return math.max(a, b) end },
}

-- Recursive descent: expr := term (('+'|'-') term)*; term := unary (('*'|'/'|'//'|'%') unary)*;
-- unary := '-' unary | atom; atom := num | name | name '(' expr, expr ')' | '(' expr ')'.
local function parser(toks, dims, src)
  local pos = 1
  local function peek() return toks[pos] end
  local function err(msg) error({ msg = msg }, 0) end
  local function checked(v, a, op, b)
    if v > MAX_VALUE or v < -MAX_VALUE or (op == "*" and a ~= 0 and v // a ~= b) then
      err(("%d %s %d is too large"):format(a, op, b))
    end
    return v
  end
  local expr
  local function atom()
    local t = toks[pos]
    if not t then err("expression ends early") end
    pos = pos + 1
    if t.k == "num" then return t.v end
    if t.k == "name" then
      local f = FUNCS[t.v]
      local nt = toks[pos]
      if f and nt and nt.k == "op" and nt.v == "(" then
        pos = pos + 1
        local args = { expr() }
        while toks[pos] and toks[pos].v == "," do
          pos = pos + 1
          args[#args + 1] = expr()
        end
        if not (toks[pos] and toks[pos].v == ")") then err("missing ')' after arguments of " .. t.v) end
        pos = pos + 1
        if #args ~= f[1] then err(("%s takes %d arguments, got %d"):format(t.v, f[1], #args)) end
        local v, e = f[2](table.unpack(args))
        if v == nil then err(e) end
        return v
      end
      local v = dims[t.v]
      if v == nil then err(("unknown dimension '%s'"):format(t.v)) end
      if math.type(v) ~= "integer" then err(("dimension '%s' is not an integer"):format(t.v)) end
      return v
    end
    if t.v == "(" then
      local v = expr()
      if not (toks[pos] and toks[pos].v == ")") then err("missing ')'") end
      pos = pos + 1
      return v
    end
    err(("unexpected '%s'"):format(t.v))
  end
  local function unary()
    local t = peek()
    if t and t.k == "op" and t.v == "-" then
      pos = pos + 1
      return -unary()
    end
    return atom()
  end
  local function term()
    local v = unary()
    while true do
      local t = peek()
      if not (t and t.k == "op" and (t.v == "*" or t.v == "/" or t.v == "//" or t.v == "%")) then return v end
      pos = pos + 1
      local r = unary()
      if t.v == "*" then
        v = checked(v * r, v, "*", r)
      else
        if r == 0 then err("division by zero") end
        if t.v == "/" then
          if v % r ~= 0 then err(("%d / %d is not exact (use // or cdiv)"):format(v, r)) end
          v = v // r
        elseif t.v == "//" then
          v = v // r
        else
          v = v % r
        end
      end
    end
  end
  function expr()
    local v = term()
    while true do
      local t = peek()
      if not (t and t.k == "op" and (t.v == "+" or t.v == "-")) then return v end
      pos = pos + 1
      local r = term()
      if t.v == "+" then v = checked(v + r, v, "+", r) else v = checked(v - r, v, "-", r) end
    end
  end
  return function()
    local ok, v = pcall(expr)
    if not ok then
      if type(v) == "table" then return nil, v.msg .. " in '" .. src .. "'" end
      error(v, 0)
    end
    if pos <= #toks then return nil, ("unexpected '%s' in '%s'"):format(toks[pos].v, src) end
    return v
  end
end

function M.eval(expr, dims)
  dims = dims or {}
  if math.type(expr) == "integer" then return expr end
  if type(expr) == "number" then
    local i = math.tointeger(expr)
    if i then return i end
    return nil, ("%s is not an integer"):format(tostring(expr))
  end
  if type(expr) ~= "string" then return nil, "an expression must be an integer or a string, got " .. type(expr) end
  if #expr > 256 then return nil, "expression longer than 256 characters" end
  local toks, e = tokenize(expr)
  if not toks then return nil, e .. " in '" .. expr .. "'" end
  if #toks == 0 then return nil, "empty expression" end
  return parser(toks, dims, expr)()
end

-- Names an expression uses (for checks that a task's shapes only name its dims).
function M.names(expr)
  local out = {}
  if type(expr) ~= "string" then return out end
  local toks = tokenize(expr) or {}
  for i, t in ipairs(toks) do
    local nxt = toks[i + 1]
    if t.k == "name" and not (FUNCS[t.v] and nxt and nxt.v == "(") then out[#out + 1] = t.v end
  end
  return out
end

function M.expand(shape, dims)
  if type(shape) == "string" or math.type(shape) == "integer" then shape = { shape } end
  if type(shape) ~= "table" then return nil, "a shape must be a list of expressions or a string, got " .. type(shape) end
  if #shape == 0 then return nil, "a shape needs at least one dimension" end
  local out, numel = {}, 1
  for i, e in ipairs(shape) do
    local v, err = M.eval(e, dims)
    if not v then return nil, ("[%d]: %s"):format(i, err) end
    if v <= 0 then return nil, ("[%d]: '%s' evaluates to %d; extents must be positive"):format(i, tostring(e), v) end
    if v > M.MAX_ELEMENTS // numel then
      return nil, ("holds more than 2^40 elements (the most a buffer may have) at [%d] = %d"):format(i, v)
    end
    numel = numel * v
    out[i] = v
  end
  for k in pairs(shape) do
    if math.type(k) ~= "integer" or k < 1 or k > #shape then
      return nil, ("has a non-list key '%s'"):format(tostring(k))
    end
  end
  return out
end

return M
