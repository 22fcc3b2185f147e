-- klab.mutate.cuda: the mutation operators for CUDA C++ device code.
--
--   cuda.sites(text) -> list of {family=, operator=, edits={{s=, e=, text=}...},
--                                at=<byte of the site>, helper=<name or nil>}
--
-- Every operator works on tokens (klab.mutate.tokens), so a comment, a
-- string or a preprocessor line is never changed; an edit replaces the
-- bytes s..e of the source (e = s - 1 inserts). A helper names a device
-- function the mutant needs (HELPERS), which klab.mutate puts in front of
-- the first function of the file, on the same line, so that line numbers
-- stay those of the original. Which expressions are floating point, which
-- parameters are dimensions and which loops are reduction trees is read
-- from the declarations (klab.mutate.source); it is a reading, not a
-- compiler's: where it is wrong, the mutant mostly does not compile or
-- compiles to the original's binary (both dropped by klab.mutate), and one
-- that compiles to another binary is still a fault, judged like any other.
local tokens = require "klab.mutate.tokens"
local source = require "klab.mutate.source"

local is, BASE, KEYWORDS = source.is, source.BASE, source.KEYWORDS
local stmt_end, stmt_start, loop_of = source.stmt_end, source.stmt_start, source.loop_of
local operand_before, operand_after, float_literal = source.operand_before, source.operand_after, source.float_literal

local M = {}

-- Device functions a mutant may need (they use no header).
M.HELPERS = {
  -- v rounded to nearest with `bits` bits of mantissa kept (7: bf16, 10:
  -- f16, 3: fp8 e4m3), as a narrower type would hold it.
  round = "static __device__ __forceinline__ float klab_mutant_round(float v, unsigned bits) "
    .. "{ unsigned u = __float_as_uint(v), drop = 23u - bits; "
    .. "return __uint_as_float((u + (1u << (drop - 1u))) & ~((1u << drop) - 1u)); } ",
  -- the hardware's approximate tanh (sm_75 and later).
  tanh = "static __device__ __forceinline__ float klab_mutant_tanh(float x) "
    .. "{ float y; asm(\"tanh.approx.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x)); return y; } ",
}

-- Fast-math intrinsics for the exact library calls.
local FAST = {
  expf = "__expf", exp10f = "__exp10f", logf = "__logf", log2f = "__log2f", log10f = "__log10f",
  sinf = "__sinf", cosf = "__cosf", tanf = "__tanf", powf = "__powf", sqrtf = "__fsqrt_rz",
  tanhf = "klab_mutant_tanh",
}

-- Calls that give a float (besides functions the file declares as float).
local FLOAT_CALLS = {
  __bfloat162float = true, __half2float = true, __low2float = true, __high2float = true, fmaxf = true,
  fminf = true, fabsf = true, sqrtf = true, rsqrtf = true, expf = true, logf = true, tanhf = true, fmaf = true,
  __int_as_float = true, __uint_as_float = true, exp2f = true, __expf = true,
}
-- Calls that widen a stored narrow value (an input read as bf16 or f16).
local WIDEN = { __bfloat162float = true, __half2float = true, __low2float = true, __high2float = true }
local ASSIGN = {
  ["="] = true, ["+="] = true, ["-="] = true, ["*="] = true, ["/="] = true, ["%="] = true, ["&="] = true,
  ["|="] = true, ["^="] = true, ["<<="] = true, [">>="] = true,
}
local CMP = { ["<"] = "<=", ["<="] = "<", [">"] = ">=", [">="] = ">" }
-- Where a comparison's right-hand side ends.
local RHS_END = {
  [")"] = true, [";"] = true, [","] = true, ["&&"] = true, ["||"] = true, ["?"] = true, [":"] = true,
  ["]"] = true, ["}"] = true,
}

-- What the operators below share for one source: its reading
-- (klab.mutate.source: tokens, matching brackets, declarations, loops), the
-- sites found so far (out) and the helpers that read and edit tokens.
local function reader(text)
  local r = source.read(text)
  local tk, match, vars, fns, dims, is_dim = r.tk, r.match, r.vars, r.fns, r.dims, r.is_dim
  local ls, tmpl = r.loops, r.templates
  local out = {}
  local function src(a, b) return text:sub(tk[a].s, tk[b].e) end
  local function add(family, operator, at, edits, helper)
    out[#out + 1] = { family = family, operator = operator, at = tk[at].s, edits = edits, helper = helper }
  end
  local function edit(a, b, new) return { s = tk[a].s, e = tk[b].e, text = new } end
  local function insert(a, new) return { s = tk[a].s, e = tk[a].s - 1, text = new } end

  local function floatish(a, b)
    for q = a, b do
      local t = tk[q]
      if float_literal(t) then return true end
      if t.k == "id" then
        local v = vars[t.t]
        if t.t == "float" or t.t == "double" then return true end
        if v and v.base == "float" and (not v.ptr or is(tk[q + 1], "[")) then return true end
        if is(tk[q + 1], "(") and (FLOAT_CALLS[t.t] or fns[t.t] == "float") then return true end
      end
    end
    return false
  end
  local function in_range(i, r) return r and i >= r[1] and i <= r[2] end

  -- The additive terms at the top level of tokens a..b: {{a, b, sep=}...}
  -- (sep: the + or - in front of the term).
  local function terms(a, b)
    local list, first, k, sep = {}, a, a, nil
    while k <= b do
      local t = tk[k]
      if is(t, "(") or is(t, "[") then
        k = match[k] or k
      elseif (is(t, "+") or is(t, "-")) and k > first then
        local p = tk[k - 1]
        if p.k == "id" or p.k == "num" or is(p, ")") or is(p, "]") then
          list[#list + 1] = { first, k - 1, sep = sep }
          first, sep = k + 1, k
        end
      end
      k = k + 1
    end
    if first <= b then list[#list + 1] = { first, b, sep = sep } end
    return list
  end
  -- The first identifier operand of a term (its whole chain: x, p[i], a.b).
  local function first_atom(r)
    local k = r[1]
    while k <= r[2] do
      local t = tk[k]
      if is(t, "(") and match[k] and not (tk[k + 1] and BASE[tk[k + 1].t]) then
        -- a parenthesised operand is not an identifier; a cast is skipped
        return nil
      elseif is(t, "(") and match[k] then
        k = match[k]
      elseif t.k == "id" and not BASE[t.t] and not is(tk[k + 1], "(") then
        local e = operand_after(tk, match, k)
        if e and e <= r[2] then return k, e end
        return nil
      end
      k = k + 1
    end
  end
  local function has_top(r, op)
    local k = r[1]
    while k <= r[2] do
      if is(tk[k], "(") or is(tk[k], "[") then k = match[k] or k elseif is(tk[k], op) then return true end
      k = k + 1
    end
    return false
  end

  -- Index arithmetic: subscripts, and pointers set to a base plus offsets.
  local function index_expression(a, b, at)
    local ts = terms(a, b)
    if #ts >= 2 then
      -- two indices swapped: the first identifiers of the first two terms
      local a1, e1 = first_atom(ts[1])
      local a2, e2 = first_atom(ts[2])
      local single = e1 == ts[1][2] and e2 == ts[2][2] and a1 == ts[1][1] and a2 == ts[2][1]
      if a1 and a2 and src(a1, e1) ~= src(a2, e2) and not (single and is(tk[ts[2].sep], "+")) then
        add("indexing", "two indices swapped", at, { edit(a1, e1, src(a2, e2)), edit(a2, e2, src(a1, e1)) })
      end
      -- a row offset dropped: a product term
      for n, r in ipairs(ts) do
        if has_top(r, "*") then
          local from, to = r[1], r[2]
          if r.sep then from = r.sep elseif ts[n + 1] then to = ts[n + 1].sep end
          add("indexing", "row offset dropped", at, { edit(from, to, "") })
        end
      end
    end
    -- a stride replaced by another dimension
    if #dims >= 2 then
      for q = a, b do
        local t = tk[q]
        if t.k == "id" and is_dim[t.t] and (is(tk[q - 1], "*") or is(tk[q + 1], "*")) then
          local other
          for n, d in ipairs(dims) do
            if d == t.t then other = dims[n % #dims + 1] end
          end
          add("indexing", "stride replaced by another dimension", q, { edit(q, q, other) })
        end
      end
    end
  end

  return { tk = tk, match = match, vars = vars, fns = fns, dims = dims, is_dim = is_dim, ls = ls, tmpl = tmpl,
    out = out, src = src, add = add, edit = edit, insert = insert, floatish = floatish, in_range = in_range,
    index_expression = index_expression }
end

-- The operators at token i (t, in loop L or nil), family by family.
local function precision_at(h, i, t, L)
  local tk, match, vars, fns = h.tk, h.match, h.vars, h.fns
  local src, add, edit, floatish = h.src, h.add, h.edit, h.floatish
  -- precision: a fast-math intrinsic for the exact call
  if t.k == "id" and FAST[t.t] and is(tk[i + 1], "(") and not is(tk[i - 1], ".") and not is(tk[i - 1], "::")
      and not (tk[i - 1] and BASE[tk[i - 1].t]) then
    add("precision", "fast-math intrinsic", i, { edit(i, i, FAST[t.t]) }, t.t == "tanhf" and "tanh" or nil)
  end
  -- precision: x / y -> __fdividef(x, y) where the division is in floating point
  if is(t, "/") then
    local a, b = operand_before(tk, match, i), operand_after(tk, match, i + 1)
    if a and b and (floatish(a, i - 1) or floatish(i + 1, b)) then
      add("precision", "fast-math intrinsic", i,
        { edit(a, b, "__fdividef(" .. src(a, i - 1) .. ", " .. src(i + 1, b) .. ")") })
    end
  end
  -- precision: an accumulator narrowed (ID += E; or ID = E(ID); in a loop)
  if L and t.k == "id" and vars[t.t] and vars[t.t].base == "float" and not vars[t.t].ptr
      and stmt_start(tk, match, i) and (is(tk[i + 1], "+=") or is(tk[i + 1], "=")) then
    local e = stmt_end(tk, match, i)
    local uses = false
    for q = i + 2, e - 1 do
      if tk[q].k == "id" and tk[q].t == t.t then uses = true end
    end
    if is(tk[e], ";") and e > i + 2 and (uses or is(tk[i + 1], "+=")) then
      local rhs = src(i + 2, e - 1)
      local value = is(tk[i + 1], "+=") and (t.t .. " + (" .. rhs .. ")") or rhs
      for _, n in ipairs { { 7, "bf16" }, { 10, "f16" } } do
        add("precision", "accumulator narrowed to " .. n[2], i,
          { edit(i, e, ("%s = klab_mutant_round(%s, %d);"):format(t.t, value, n[1])) }, "round")
      end
    end
  end
  -- precision: an input rounded to a narrower type
  if t.k == "id" and vars[t.t] and vars[t.t].ptr and vars[t.t].const and vars[t.t].base == "float"
      and is(tk[i + 1], "[") and not is(tk[i - 1], "&") and not is(tk[i - 1], ".") then
    local e = operand_after(tk, match, i)
    local n = e and tk[e + 1]
    if e and not (n and n.k == "op" and (ASSIGN[n.t] or n.t == "++" or n.t == "--")) then
      add("precision", "input rounded to bf16", i, { edit(i, e, "klab_mutant_round(" .. src(i, e) .. ", 7)") },
        "round")
    end
  end
  if t.k == "id" and is(tk[i + 1], "(") and match[i + 1] and not (tk[i - 1] and BASE[tk[i - 1].t])
      and (WIDEN[t.t] or (fns[t.t] == "float" and (t.t:match("bf16") or t.t:match("half")))) then
    local e = match[i + 1]
    add("precision", "input rounded to fp8 precision", i,
      { edit(i, e, "klab_mutant_round(" .. src(i, e) .. ", 3)") }, "round")
  end
end

local function bounds_at(h, i, t)
  local tk, match, ls, tmpl = h.tk, h.match, h.ls, h.tmpl
  local src, add, edit, in_range = h.src, h.add, h.edit, h.in_range
  -- bounds: a comparison off by one, the last row or iteration skipped
  if t.k == "op" and CMP[t.t] and not tmpl[i] then
    local k = i + 1
    while tk[k] and not (tk[k].k == "op" and RHS_END[tk[k].t]) do
      if is(tk[k], "(") or is(tk[k], "[") then k = match[k] or k end
      k = k + 1
    end
    local rhs_zero = k == i + 2 and tk[i + 1].t == "0"
    local in_loop = false
    for _, lp in ipairs(ls) do
      if in_range(i, lp.cond) then in_loop = true end
    end
    if k > i + 1 and not (rhs_zero and t.t == ">") then
      add("bounds", in_loop and "loop bound off by one" or "guard off by one", i, { edit(i, i, CMP[t.t]) })
    end
    if k > i + 1 and not rhs_zero and (t.t == "<" or t.t == ">=") then
      add("bounds", in_loop and "last iteration skipped" or "last row skipped", i,
        { edit(i + 1, k - 1, "(" .. src(i + 1, k - 1) .. ") - 1") })
    end
  end
end

local function indexing_at(h, i, t)
  local tk, match, vars = h.tk, h.match, h.vars
  local add, edit, index_expression = h.add, h.edit, h.index_expression
  -- indexing: in a subscript (not an array's declaration)
  if is(t, "[") and match[i] and match[i] > i + 1 and tk[i - 1]
      and (tk[i - 1].k == "id" or is(tk[i - 1], "]") or is(tk[i - 1], ")"))
      and not (tk[i - 2] and (BASE[tk[i - 2].t] or is(tk[i - 2], "*"))) and not (tk[i - 1].k == "id" and BASE[tk[i - 1].t]) then
    local close = match[i]
    index_expression(i + 1, close - 1, i)
    -- a[x][y] -> a[y][x]
    local n2 = close + 1
    if is(tk[n2], "[") and match[n2] == n2 + 2 and close == i + 2 and not is(tk[i - 1], "]")
        and tk[i + 1].t ~= tk[n2 + 1].t then
      add("indexing", "two indices swapped", i,
        { edit(i + 1, i + 1, tk[n2 + 1].t), edit(n2 + 1, n2 + 1, tk[i + 1].t) })
    end
  end
  -- indexing: a pointer declared as a base plus offsets
  if t.k == "id" and vars[t.t] and vars[t.t].ptr and is(tk[i - 1], "*") and is(tk[i + 1], "=") then
    local e = stmt_end(tk, match, i)
    local base = tk[i + 2]
    if base and base.k == "id" and is(tk[i + 3], "+") and is(tk[e], ";") then
      add("indexing", "row offset dropped", i + 2, { edit(i + 3, e - 1, "") })
      index_expression(i + 4, e - 1, i + 2)
    end
  end
end

local function constants_at(h, i, t)
  local tk, match, ls = h.tk, h.match, h.ls
  local add, edit, in_range = h.add, h.edit, h.in_range
  -- constants: a scale or an epsilon, a shift count
  if float_literal(t) then
    local body, suffix = t.t:match("^(.-)([fFlL]?)$")
    local v = tonumber(body)
    if v and v ~= 0 then
      local eps = math.abs(v) < 1e-3
      local s = ("%.9g"):format(eps and v * 100 or v * 1.05)
      if not s:match("[%.eEn]") then s = s .. ".0" end
      add("constants", eps and "epsilon changed" or "scale changed", i, { edit(i, i, s .. suffix) })
    end
  end
  if t.k == "op" and (t.t == "<<" or t.t == ">>" or t.t == "<<=" or t.t == ">>=") and tk[i + 1]
      and tk[i + 1].k == "num" and tk[i + 1].t:match("^%d+[uU]?$") then
    local n, u = tk[i + 1].t:match("^(%d+)([uU]?)$")
    local tree = false
    for _, lp in ipairs(ls) do
      if lp.tree and in_range(i, lp.step) then tree = true end
    end
    if tree then
      -- a tree that halves twice per step skips every other step
      add("reductions", "tree steps skipped", i + 1, { edit(i + 1, i + 1, (n + 1) .. u) })
    elseif tonumber(n) < 31 then
      add("constants", "shift count changed", i + 1, { edit(i + 1, i + 1, (n + 1) .. u) })
    end
  end
end

local function reductions_at(h, i, t)
  local tk, match = h.tk, h.match
  local add, edit = h.add, h.edit
  -- reductions: a shuffle step's partial sum dropped
  if stmt_start(tk, match, i) and t.k == "id" and not BASE[t.t] and not KEYWORDS[t.t] then
    local e = stmt_end(tk, match, i)
    local shfl, assigns = false, false
    for q = i, e do
      if tk[q].k == "id" and tk[q].t:match("^__shfl") then shfl = true end
      if tk[q].k == "op" and ASSIGN[tk[q].t] then assigns = true end
    end
    if shfl and assigns and is(tk[e], ";") then
      add("reductions", "shuffle partial sum dropped", i, { edit(i, e - 1, "") })
    end
  end
end

-- synchronisation removed, and the work a load stage does skipped.
local function synchronisation_at(h, i, t, L)
  local tk, match, tmpl = h.tk, h.match, h.tmpl
  local add, edit, insert = h.add, h.edit, h.insert
  -- synchronisation: a barrier, fence or wait call removed
  if t.k == "id" and stmt_start(tk, match, i) and not KEYWORDS[t.t] then
    local name = t.t:lower()
    local open = i + 1
    if is(tk[open], "<") and tmpl[open] then
      open = open + 1
      while tk[open] and not (is(tk[open], ">") and tmpl[open]) do open = open + 1 end
      open = open + 1
    end
    local close = is(tk[open], "(") and match[open]
    if close and is(tk[close + 1], ";") and not name:match("^__shfl") then
      local kind = name:match("fence") and "fence removed" or name:match("wait") and "wait removed"
        or name:match("arrive") and "arrive removed"
        or (name:match("sync") or name:match("barrier")) and "barrier removed"
      if kind then add("synchronisation", kind, i, { edit(i, close, "") }) end
    end
    if (t.t == "asm" or t.t == "__asm__") then
      local open2 = i + 1
      if tk[open2] and (tk[open2].t == "volatile" or tk[open2].t == "__volatile__") then open2 = open2 + 1 end
      local close2 = is(tk[open2], "(") and match[open2]
      if close2 and is(tk[close2 + 1], ";") then
        local code, outputs, colon = {}, false, false
        for q = open2 + 1, close2 - 1 do
          if is(tk[q], ":") then colon = true end
          if tk[q].k == "str" then
            if colon then
              if tk[q].t:match('^"[=+]') then outputs = true end
            else
              code[#code + 1] = tk[q].t
            end
          end
        end
        local s = table.concat(code)
        local kind = (s:match("fence") or s:match("membar")) and "fence removed"
          or s:match("wait_group") and "wait removed"
          or s:match("mbarrier%.arrive") and "arrive removed"
          or (s:match("%f[%w]bar%.sync") or s:match("%f[%w]barrier%.")) and "barrier removed"
        if kind and not outputs then add("synchronisation", kind, i, { edit(i, close2, "") }) end
        if L and L.var and s:match("cp%.async") and not s:match("wait") then
          add("work", "load stage skipped on odd iterations", i, { insert(i, ("if ((%s) %% 2 == 0) "):format(L.var)) })
        end
      end
    end
    -- work: a load stage skipped on some iterations
    if L and L.var and close and is(tk[close + 1], ";") and (name:match("load") or name:match("copy")
        or name:match("cp_async") or name:match("tma")) and not name:match("wait") then
      add("work", "load stage skipped on odd iterations", i, { insert(i, ("if ((%s) %% 2 == 0) "):format(L.var)) })
    end
    local eq = is(tk[i + 1], "=") and i + 1
      or (is(tk[i + 1], "[") and match[i + 1] and is(tk[match[i + 1] + 1], "=") and match[i + 1] + 1)
    if L and L.var and eq then
      local f = tk[eq + 1]
      local fe = f and f.k == "id" and is(tk[eq + 2], "(") and match[eq + 2]
      local fname = f and f.t:lower() or ""
      if fe and is(tk[fe + 1], ";") and (fname:match("load") or fname:match("ldg")) then
        add("work", "load stage skipped on odd iterations", i, { insert(i, ("if ((%s) %% 2 == 0) "):format(L.var)) })
      end
    end
  end
end

-- The operators on loops: reduction trees' steps, odd iterations skipped.
local function loop_sites(h)
  local tk, match, ls = h.tk, h.match, h.ls
  local src, add, edit, insert = h.src, h.add, h.edit, h.insert
  for _, lp in ipairs(ls) do
    local body1 = tk[lp.body[1]]
    if lp.tree and lp.assign and lp.assign < lp.init[2] + 1 then
      -- reductions: the first (widest) step of a tree skipped
      local a, b = lp.assign + 1, lp.init[2]
      if b >= a then
        add("reductions", "tree step skipped", lp.at,
          { edit(a, b, "(" .. src(a, b) .. ") " .. (lp.tree == "down" and ">>" or "<<") .. " 1") })
      end
      -- reductions: the partial sum of the step at offset 1 dropped
      local k = lp.body[1]
      if is(body1, "{") then k = k + 1 end
      while k <= lp.body[2] do
        local e = stmt_end(tk, match, k)
        local assigns = false
        for q = k, e do
          if tk[q].k == "op" and ASSIGN[tk[q].t] then assigns = true end
        end
        if assigns and not (tk[k].k == "id" and BASE[tk[k].t]) then
          add("reductions", "partial sum dropped at the last step", k, { insert(k, ("if ((%s) != 1) "):format(lp.var)) })
          break
        end
        k = e + 1
      end
    elseif lp.var and not lp.tree and not lp.unrolled and lp.body[2] >= lp.body[1] then
      -- work: odd iterations of a loop skipped
      local skip = ("if ((%s) %% 2 == 1) continue; "):format(lp.var)
      if is(body1, "{") then
        add("work", "odd iterations skipped", lp.at,
          { { s = body1.e + 1, e = body1.e, text = " " .. skip } })
      else
        add("work", "odd iterations skipped", lp.at,
          { insert(lp.body[1], "{ " .. skip), { s = tk[lp.body[2]].e + 1, e = tk[lp.body[2]].e, text = " }" } })
      end
    end
  end
end

-- precision: an accumulator array (float acc[..][..]) narrowed to bf16 at
-- the end of every step of the main loop that accumulates into it.
local function accumulator_array_sites(h)
  local tk, match, ls = h.tk, h.match, h.ls
  local src, add = h.src, h.add
  for i, t in ipairs(tk) do
    local name = tk[i + 1]
    if t.t == "float" and name and name.k == "id" and is(tk[i + 2], "[") then
      local sizes, k = {}, i + 2
      while is(tk[k], "[") and match[k] do
        sizes[#sizes + 1] = src(k + 1, match[k] - 1)
        k = match[k] + 1
      end
      local best
      for _, lp in ipairs(ls) do
        if lp.var and not lp.unrolled and lp.at > i and is(tk[lp.body[1]], "{")
            and (not best or lp.body[2] - lp.body[1] > best.body[2] - best.body[1]) then
          for q = lp.body[1], lp.body[2] do
            if tk[q].k == "id" and tk[q].t == name.t then
              best = lp
              break
            end
          end
        end
      end
      if best and #sizes > 0 then
        local head, idx = {}, {}
        for n, size in ipairs(sizes) do
          head[#head + 1] = ("_Pragma(\"unroll\") for (int klab_q%d = 0; klab_q%d < (%s); ++klab_q%d)"):format(n, n, size, n)
          idx[#idx + 1] = ("[klab_q%d]"):format(n)
        end
        local cell = name.t .. table.concat(idx)
        local close = tk[best.body[2]]
        add("precision", "accumulator narrowed to bf16", best.body[2], { { s = close.s, e = close.s - 1,
          text = ("{ %s %s = klab_mutant_round(%s, 7); } "):format(table.concat(head, " "), cell, cell) } }, "round")
      end
    end
  end
end

-- The M.sites of one source.
function M.sites(text)
  local h = reader(text)
  for i, t in ipairs(h.tk) do
    local L = loop_of(h.ls, i)
    precision_at(h, i, t, L)
    bounds_at(h, i, t)
    indexing_at(h, i, t)
    constants_at(h, i, t)
    reductions_at(h, i, t)
    synchronisation_at(h, i, t, L)
  end
  loop_sites(h)
  accumulator_array_sites(h)
  return h.out
end

-- Where the helpers go: before the first declaration at file scope that
-- declares a device function or kernel (a byte offset), or nil.
function M.helper_place(text)
  local tk = tokens.cuda(text)
  local depth = 0
  for i, t in ipairs(tk) do
    if is(t, "{") then depth = depth + 1 elseif is(t, "}") then depth = depth - 1 end
    if depth == 0 and t.k == "id" and (t.t == "__device__" or t.t == "__global__") then
      local k = i
      while tk[k - 1] and tk[k - 1].k ~= "pp" and not is(tk[k - 1], ";") and not is(tk[k - 1], "}") do k = k - 1 end
      return tk[k].s
    end
  end
end

return M
