-- klab.mutate.ptx: the mutation operators for PTX.
--
--   ptx.sites(text) -> the same sites as klab.mutate.cuda's
--
-- PTX has no expressions to take apart, so only the operators that are one
-- instruction's change exist here (ptx.FAMILIES): a barrier, fence or wait
-- removed (synchronisation); a setp comparison off by one (bounds); an
-- exact division, square root or reciprocal made approximate (precision);
-- a float immediate or a shift count changed (constants). Indexing,
-- reductions and work have no PTX operator: their faults are spread over
-- several instructions and registers.
local M = {}

M.FAMILIES = { "precision", "bounds", "constants", "synchronisation" }

-- Comments blanked out (same length, same lines), so that no pattern
-- matches inside one.
local function code_only(text)
  local out = text:gsub("/%*.-%*/", function(c) return (c:gsub("[^\n]", " ")) end)
  return (out:gsub("//[^\n]*", function(c) return (" "):rep(#c) end))
end

local SYNC = {
  { "^bar%.sync", "barrier removed" }, { "^barrier%.sync", "barrier removed" }, { "^bar%.warp%.sync", "barrier removed" },
  { "^barrier%.cluster%.wait", "wait removed" }, { "^membar%.", "fence removed" }, { "^fence%.", "fence removed" },
  { "^cp%.async%.wait_", "wait removed" }, { "^cp%.async%.bulk%.wait_group", "wait removed" },
  { "^wgmma%.wait_group", "wait removed" }, { "^wgmma%.fence", "fence removed" },
}
local SETP = { lt = "le", le = "lt", gt = "ge", ge = "gt" }
local APPROX = { ["div.rn.f32"] = "div.approx.f32", ["div.full.f32"] = "div.approx.f32",
  ["sqrt.rn.f32"] = "sqrt.approx.f32", ["rcp.rn.f32"] = "rcp.approx.f32" }

local function scaled_hex_float(hex)
  local v = string.unpack("<f", string.pack("<I4", tonumber(hex, 16)))
  if v == 0 or v ~= v or v == math.huge or v == -math.huge then return nil end
  local eps = math.abs(v) < 1e-3
  local bits = string.unpack("<I4", string.pack("<f", eps and v * 100 or v * 1.05))
  return ("%08X"):format(bits), eps and "epsilon changed" or "scale changed"
end

function M.sites(text)
  local code = code_only(text)
  local out = {}
  local function add(family, operator, s, e, new)
    out[#out + 1] = { family = family, operator = operator, at = s, edits = { { s = s, e = e, text = new } } }
  end
  -- Each instruction: the text after a separator (; { }) and an optional
  -- label, up to its semicolon.
  local pos = 1
  while true do
    local s, e = code:find("[^;{}]*;", pos)
    if not s then break end
    local seg = code:sub(s, e)
    local lead = seg:match("^%s*[%w_$]+%s*:%s*") or seg:match("^%s*")
    local is_ = s + #lead
    local ins = code:sub(is_, e)
    local guard = ins:match("^@!?%%?[%w_]+%s+") or ""
    local op = ins:sub(#guard + 1)
    for _, p in ipairs(SYNC) do
      if op:match(p[1]) then add("synchronisation", p[2], is_, e, "") break end
    end
    local cmp = op:match("^setp%.(%a%a)%.")
    if SETP[cmp] then
      local at = is_ + #guard + 5
      add("bounds", "setp bound off by one", at, at + 1, SETP[cmp])
    end
    for from, to in pairs(APPROX) do
      if op:sub(1, #from) == from then add("precision", "fast-math instruction", is_ + #guard, is_ + #guard + #from - 1, to) end
    end
    -- float immediates, 0fXXXXXXXX
    local k = 1
    while true do
      local a, b, hex = op:find("0[fF](%x%x%x%x%x%x%x%x)", k)
      if not a then break end
      local new, what = scaled_hex_float(hex)
      if new then add("constants", what, is_ + #guard + a + 1, is_ + #guard + b - 1, new) end
      k = b + 1
    end
    -- a shift by an immediate count
    if op:match("^sh[lr]%.") then
      local a, b, n = op:find(",%s*(%d+)%s*;$")
      if a and tonumber(n) < 31 then
        local ns = op:find("%d", a)
        add("constants", "shift count changed", is_ + #guard + ns - 1, is_ + #guard + ns - 1 + #n - 1,
          tostring(n + 1))
      end
    end
    pos = e + 1
  end
  return out
end

return M
