-- klab.eval.seed: the one seed of an evaluation, and everything drawn from it.
--
--   seed.new()                -> a 64-bit seed from the operating system
--   seed.parse(text)          -> integer | nil, why   ("0x" and 1-16 hex digits, or decimal below 2^64)
--   seed.format(s)            -> "0x" .. 16 hex digits (how a seed is shown, stored and sent)
--   seed.derive(s, label [, i]) -> an integer seed for one use (a trial, an input, the timing draws)
--   seed.rng(s)               -> draw(n): integers in [0, n), a sequence fixed by s
--
-- Every random choice of an evaluation (the contents of its correctness
-- trials, the timed inputs, their shifts, the checked positions, which
-- timed runs are checked in full) derives from one seed drawn when the
-- evaluation starts. It is stored with the result and shown in --json;
-- `klab eval --seed` and `klab replay --seed` give it back, and the same
-- seed gives the same evaluation. Seeds travel as text (format): JSON
-- numbers cannot hold 64 bits.

local M = {}

function M.new() return require("klab.sys").random_seed() end

function M.format(s) return string.format("0x%016x", s) end

function M.parse(text)
  if math.type(text) == "integer" then return text end
  if type(text) ~= "string" then return nil, "a seed is a number (0x followed by hex digits, or decimal)" end
  local hex = text:match("^0[xX](%x+)$")
  if hex then
    if #hex > 16 then return nil, "seed " .. text .. " has more than 64 bits" end
    -- Lua reads hex integers modulo 2^64, which is what a 64-bit seed is.
    return math.tointeger(tonumber("0x" .. hex))
  end
  if text:match("^%d+$") then
    local digits = text:gsub("^0+(%d)", "%1")
    if #digits > 20 or (#digits == 20 and digits > "18446744073709551615") then
      return nil, "seed " .. text .. " has more than 64 bits"
    end
    -- Below 2^64, arithmetic modulo 2^64 gives the value's bits exactly.
    local v = 0
    for d in digits:gmatch("%d") do v = v * 10 + tonumber(d) end
    return v
  end
  return nil, "seed '" .. text .. "' is not a number (0x followed by hex digits, or decimal)"
end

-- splitmix64's finaliser: every bit of the input moves every bit of the output.
local function mix(z)
  z = (z ~ (z >> 30)) * -4658895280553007687 -- 0xbf58476d1ce4e5b9
  z = (z ~ (z >> 27)) * -7723592293110705685 -- 0x94d049bb133111eb
  return z ~ (z >> 31)
end

local GOLDEN = -7046029254386353131 -- 0x9e3779b97f4a7c15

-- FNV-1a over the label, so that uses with different names never share draws.
local function label_hash(label)
  local h = -3750763034362895579 -- 0xcbf29ce484222325
  for i = 1, #label do h = (h ~ label:byte(i)) * 1099511628211 end
  return h
end

function M.derive(s, label, i)
  return mix(mix(s ~ label_hash(label)) + GOLDEN * ((i or 0) + 1))
end

function M.rng(s)
  local x = s
  return function(n)
    x = x + GOLDEN
    return (mix(x) >> 1) % n
  end
end

return M
