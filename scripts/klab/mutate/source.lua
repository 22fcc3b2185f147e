-- klab.mutate.source: what the mutation operators read in a CUDA C++
-- source: its tokens and brackets, the declared types of its names, its
-- kernels' dimension parameters, its for loops (and which are reduction
-- trees), its statements and operands.
--
--   source.read(text) -> {tk=, match=, vars=, fns=, dims=, is_dim=, loops=, templates=}
--     tk, match: klab.mutate.tokens; vars: name -> {base=, ptr=, const=}
--     ("float", "int" or "narrow"); fns: function name -> its return base;
--     dims: the kernels' scalar integer parameters in order (is_dim: a set);
--     loops: source.loops's list; templates: token indices of template and
--     cast angle brackets
--   source.stmt_end(tk, match, i), source.stmt_start(tk, match, i),
--   source.loop_of(loops, i), source.operand_before(tk, match, i),
--   source.operand_after(tk, match, i), source.float_literal(token),
--   source.is(token, op), source.BASE, source.KEYWORDS
local tokens = require "klab.mutate.tokens"

local M = {}

-- Type words: what a declaration of each declares.
M.BASE = {
  float = "float", double = "float",
  int = "int", unsigned = "int", long = "int", short = "int", char = "int", size_t = "int",
  int32_t = "int", uint32_t = "int", int64_t = "int", uint64_t = "int",
  __half = "narrow", __nv_bfloat16 = "narrow", half = "narrow",
}
M.KEYWORDS = {
  ["return"] = true, ["if"] = true, ["for"] = true, ["while"] = true, ["switch"] = true, ["sizeof"] = true,
  ["else"] = true, ["do"] = true, ["case"] = true,
}

function M.is(tk, text) return tk ~= nil and tk.k == "op" and tk.t == text end

-- Marks the angle brackets of templates and casts (wgmma_wait<1>(),
-- reinterpret_cast<T *>(p)) so that they are never taken for comparisons.
local TEMPLATE_INNER = { ["*"] = true, ["::"] = true, [","] = true, ["&"] = true }
function M.templates(tk)
  local marked = {}
  for i, t in ipairs(tk) do
    if M.is(t, "<") and tk[i - 1] and tk[i - 1].k == "id" then
      local depth, j = 1, i + 1
      while tk[j] and j <= i + 12 do
        local u = tk[j]
        if M.is(u, "<") then
          depth = depth + 1
        elseif M.is(u, ">") then
          depth = depth - 1
          if depth == 0 then break end
        elseif not (u.k == "id" or u.k == "num" or (u.k == "op" and TEMPLATE_INNER[u.t])) then
          j = nil
          break
        end
        j = j + 1
      end
      local after = j and tk[j + 1]
      if j and tk[j] and (tk[i - 1].t == "template" or M.is(after, "(") or M.is(after, "::") or M.is(after, "{")) then
        marked[i], marked[j] = true, true
      end
    end
  end
  return marked
end

-- What each name is declared as: {base=, ptr=, const=}; and functions'
-- return types.
function M.declarations(tk)
  local vars, fns = {}, {}
  for i, t in ipairs(tk) do
    local base = t.k == "id" and M.BASE[t.t]
    if base then
      local j, ptr = i + 1, false
      while tk[j] and ((tk[j].k == "id" and (M.BASE[tk[j].t] == "int" and base == "int" or tk[j].t == "const"
          or tk[j].t == "__restrict__" or tk[j].t == "__restrict")) or M.is(tk[j], "*") or M.is(tk[j], "&")) do
        if M.is(tk[j], "*") then ptr = true end
        j = j + 1
      end
      local name = tk[j]
      if name and name.k == "id" and not M.BASE[name.t] and not M.KEYWORDS[name.t] then
        if M.is(tk[j + 1], "(") then
          if not ptr then fns[name.t] = fns[name.t] or base end
        elseif not vars[name.t] then
          local const = (tk[i - 1] and tk[i - 1].t == "const") or (tk[i - 2] and tk[i - 2].t == "const")
          vars[name.t] = { base = base, ptr = ptr, const = const and true or false }
        end
      end
    end
  end
  return vars, fns
end

-- The scalar integer parameters of the file's kernels, in order: the
-- dimensions a stride can be confused with.
function M.dimensions(tk, match)
  local dims, seen = {}, {}
  for i, t in ipairs(tk) do
    if t.t == "__global__" then
      local j = i + 1
      while tk[j] and not (tk[j].k == "id" and tk[j].t ~= "__launch_bounds__" and M.is(tk[j + 1], "(")) do
        j = j + 1
      end
      local close = tk[j] and match[j + 1]
      if close then
        local k, first = j + 2, j + 2
        while k <= close do
          if M.is(tk[k], "(") or M.is(tk[k], "[") then k = match[k] or k end
          if k == close or M.is(tk[k], ",") then
            local base, ptr, name
            for q = first, k - 1 do
              if M.is(tk[q], "*") or M.is(tk[q], "[") then ptr = true end
              if tk[q].k == "id" then
                base = base or M.BASE[tk[q].t]
                name = tk[q].t
              end
            end
            if base == "int" and not ptr and name and not seen[name] then
              seen[name] = true
              dims[#dims + 1] = name
            end
            first = k + 1
          end
          k = k + 1
        end
      end
    end
  end
  return dims, seen
end

-- The index of the last token of the statement that starts at token i.
function M.stmt_end(tk, match, i)
  local t = tk[i]
  if not t then return #tk end
  if M.is(t, "{") then return match[i] or #tk end
  if t.k == "id" and (t.t == "if" or t.t == "for" or t.t == "while") and M.is(tk[i + 1], "(") then
    local close = match[i + 1]
    if not close then return #tk end
    local e = M.stmt_end(tk, match, close + 1)
    if t.t == "if" and tk[e + 1] and tk[e + 1].t == "else" then e = M.stmt_end(tk, match, e + 2) end
    return e
  end
  if t.k == "id" and t.t == "do" then
    local e = M.stmt_end(tk, match, i + 1)
    local close = tk[e + 2] and match[e + 2]
    return close and close + 1 or #tk
  end
  local k = i
  while tk[k] do
    if M.is(tk[k], "(") or M.is(tk[k], "[") or M.is(tk[k], "{") then
      k = match[k] or k
    elseif M.is(tk[k], ";") then
      return k
    end
    k = k + 1
  end
  return #tk
end

-- Whether token i starts a statement.
function M.stmt_start(tk, match, i)
  local p = tk[i - 1]
  if not p or p.k == "pp" then return true end
  if M.is(p, ";") or M.is(p, "{") or M.is(p, "}") or (p.k == "id" and p.t == "else") then return true end
  if M.is(p, ")") then
    local open = match[i - 1]
    local kw = open and tk[open - 1]
    return kw ~= nil and kw.k == "id" and (kw.t == "if" or kw.t == "for" or kw.t == "while")
  end
  return false
end

-- The for loops: {at=, var=, init={a,b}, cond={a,b}, step={a,b}, body={a,b},
-- tree="down"|"up"|nil, unrolled=}. Ranges are token indices (b < a: empty).
function M.loops(tk, match)
  local out = {}
  for i, t in ipairs(tk) do
    if t.k == "id" and t.t == "for" and M.is(tk[i + 1], "(") and match[i + 1] then
      local open, close = i + 1, match[i + 1]
      local semis, k = {}, open + 1
      while k < close do
        if M.is(tk[k], "(") or M.is(tk[k], "[") then k = match[k] or k end
        if M.is(tk[k], ";") then semis[#semis + 1] = k end
        k = k + 1
      end
      if #semis == 2 then
        local L = { at = i, init = { open + 1, semis[1] - 1 }, cond = { semis[1] + 1, semis[2] - 1 },
          step = { semis[2] + 1, close - 1 } }
        for q = L.init[1], L.init[2] do
          if M.is(tk[q], "=") and tk[q - 1] and tk[q - 1].k == "id" then
            L.var, L.assign = tk[q - 1].t, q
            break
          end
        end
        local s1, s2, s3 = tk[L.step[1]], tk[L.step[1] + 1], tk[L.step[1] + 2]
        if s1 and s1.k == "id" and s1.t == L.var and L.step[2] == L.step[1] + 2 and s3 and s3.k == "num" then
          if (s2.t == ">>=" and s3.t == "1") or (s2.t == "/=" and s3.t == "2") then L.tree = "down" end
          if (s2.t == "<<=" and s3.t == "1") or (s2.t == "*=" and s3.t == "2") then L.tree = "up" end
        end
        local p = tk[i - 1]
        L.unrolled = p ~= nil and p.k == "pp" and p.t:match("^#%s*pragma%s+unroll") ~= nil
        L.body = { close + 1, M.stmt_end(tk, match, close + 1) }
        out[#out + 1] = L
      end
    end
  end
  return out
end

-- The innermost loop whose body holds token i.
function M.loop_of(ls, i)
  local best
  for _, L in ipairs(ls) do
    if i >= L.body[1] and i <= L.body[2] and (not best or L.body[1] >= best.body[1]) then best = L end
  end
  return best
end

-- The first token of the operand that ends at token i - 1 (an identifier,
-- a number, a call, a subscript, a member, or a parenthesised group), or nil.
function M.operand_before(tk, match, i)
  local k = i - 1
  while true do
    local t = tk[k]
    if not t then return nil end
    local first
    if M.is(t, ")") or M.is(t, "]") then
      first = match[k]
    elseif (t.k == "id" and not M.KEYWORDS[t.t]) or t.k == "num" then
      first = k
    end
    if not first then return nil end
    local p, f = tk[first - 1], tk[first]
    if M.is(p, ".") or M.is(p, "->") then
      k = first - 2
    elseif (M.is(f, "(") or M.is(f, "[")) and p and p.k == "id" and not M.KEYWORDS[p.t] then
      k = first - 1
    elseif M.is(f, "[") and (M.is(p, "]") or M.is(p, ")")) then
      k = first - 1
    else
      return first
    end
  end
end

-- The last token of the operand that starts at token i, or nil (a cast or a
-- unary operator there is not taken apart).
function M.operand_after(tk, match, i)
  local t = tk[i]
  if not t then return nil end
  local e
  if M.is(t, "(") then
    e = match[i]
    local n = e and tk[e + 1]
    if n and (n.k == "id" or n.k == "num" or M.is(n, "(")) then return nil end
  elseif (t.k == "id" and not M.KEYWORDS[t.t]) or t.k == "num" then
    e = i
  end
  while e do
    local n = tk[e + 1]
    if M.is(n, "(") or M.is(n, "[") then
      e = match[e + 1]
    elseif (M.is(n, ".") or M.is(n, "->")) and tk[e + 2] and tk[e + 2].k == "id" then
      e = e + 2
    else
      break
    end
  end
  return e
end

function M.float_literal(t)
  if t.k ~= "num" or t.t:match("^0[xX]") then return false end
  return t.t:match("[%.eE]") ~= nil or t.t:match("[fF]$") ~= nil
end

function M.read(text)
  local tk = tokens.cuda(text)
  local match = tokens.pairs(tk)
  local vars, fns = M.declarations(tk)
  local dims, is_dim = M.dimensions(tk, match)
  return { tk = tk, match = match, vars = vars, fns = fns, dims = dims, is_dim = is_dim, loops = M.loops(tk, match),
    templates = M.templates(tk) }
end

return M
