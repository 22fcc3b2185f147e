-- klab.report.stats: the statistics the report's numbers use, with no
-- store and no trajectory in them: a seeded generator (splitmix64, never
-- math.random), the geometric and arithmetic means, the Wilson interval of
-- a proportion and the percentile bootstrap. klab.report.metrics
-- re-exports them (metrics.rng, metrics.bootstrap, metrics.wilson, ...).
-- Definitions: docs/report.md.

local M = {}

M.DEFAULT_SEED = 20250131
M.DEFAULT_B = 1000            -- bootstrap resamples
M.DEFAULT_LEVEL = 0.95        -- confidence level of the intervals

-- ---- deterministic random numbers ---------------------------------------

-- splitmix64 (Steele, Lea, Flood 2014) on Lua's 64-bit integers, which
-- wrap around on overflow. rng(seed):next() returns the next 64-bit value
-- (as a signed integer), :int(n) an integer in 1..n, :float() in [0, 1).
local Rng = {}
Rng.__index = Rng

function M.rng(seed)
  if math.type(seed) ~= "integer" then error("metrics.rng: seed must be an integer", 2) end
  return setmetatable({ state = seed }, Rng)
end

function Rng:next()
  self.state = self.state + 0x9E3779B97F4A7C15
  local z = self.state
  z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
  z = (z ~ (z >> 27)) * 0x94D049BB133111EB
  return z ~ (z >> 31)
end

function Rng:float()
  return (self:next() >> 11) * (1.0 / 9007199254740992.0)
end

function Rng:int(n)
  return ((self:next() >> 1) % n) + 1
end

-- FNV-1a over a string, for seeds that depend on a group's name and not on
-- the order in which groups are computed.
local function fnv(s)
  local h = -3750763034362895579   -- 0xcbf29ce484222325
  for i = 1, #s do
    h = (h ~ s:byte(i)) * 0x100000001b3
  end
  return h
end
M.fnv1a = fnv

-- ---- small statistics ---------------------------------------------------

-- Geometric mean of positive numbers; nil for an empty list.
function M.geomean(xs)
  if #xs == 0 then return nil end
  local s = 0
  for _, x in ipairs(xs) do
    if x <= 0 then return 0 end
    s = s + math.log(x)
  end
  return math.exp(s / #xs)
end

function M.mean(xs)
  if #xs == 0 then return nil end
  local s = 0
  for _, x in ipairs(xs) do s = s + x end
  return s / #xs
end

-- ---- intervals of a proportion ------------------------------------------

-- The standard normal distribution function, from erfc by its continued
-- fraction's Chebyshev fit (Numerical Recipes' erfcc: relative error below
-- 1.2e-7 everywhere).
local function norm_cdf(x)
  local z = math.abs(x) / math.sqrt(2)
  local t = 1 / (1 + 0.5 * z)
  local r = t * math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 +
    t * 0.17087277)))))))))
  return x >= 0 and 1 - r / 2 or r / 2
end

-- The normal quantile z with P(Z <= z) = q, by bisection on norm_cdf.
local z_cache = {}
function M.normal_quantile(q)
  if z_cache[q] then return z_cache[q] end
  local lo, hi = -10, 10
  for _ = 1, 100 do
    local mid = (lo + hi) / 2
    if norm_cdf(mid) < q then lo = mid else hi = mid end
  end
  z_cache[q] = (lo + hi) / 2
  return z_cache[q]
end

-- wilson(k, n [, level]) -> {lo, hi}: the Wilson score interval of the
-- proportion k/n (Wilson 1927), which stays inside [0, 1] and keeps a
-- width at 0 of n and n of n, where a percentile bootstrap collapses to a
-- point. nil when n is 0.
function M.wilson(k, n, level)
  if not n or n <= 0 then return nil end
  local z = M.normal_quantile(1 - (1 - (level or M.DEFAULT_LEVEL)) / 2)
  local p, z2 = k / n, z * z
  local denom = 1 + z2 / n
  local center = (p + z2 / (2 * n)) / denom
  local half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
  return { k == 0 and 0 or math.max(0, center - half), k == n and 1 or math.min(1, center + half) }
end

-- Percentile interval of a sorted list (nearest rank): the values at ranks
-- ceil(a/2 * B) and ceil((1 - a/2) * B), a = 1 - level.
local function interval(sorted, level)
  local B = #sorted
  if B == 0 then return nil, nil end
  local a = (1 - level) / 2
  local lo = math.max(1, math.ceil(a * B - 1e-9))
  local hi = math.min(B, math.ceil((1 - a) * B - 1e-9))
  return sorted[lo], sorted[hi]
end

-- Bootstrap over items (a list; for a stratified bootstrap, a list of
-- lists, each resampled on its own). stat(sample) returns a number or a
-- list of numbers (nil entries allowed, with the list's length in field n:
-- resamples where an entry is undefined are left out of its interval). Returns a list of
-- {lo, hi} (one per entry of stat's result; for a number, the list has
-- one entry). Options: B, seed (an integer), key (a string mixed into the
-- seed), level, strata (true: items is a list of strata). One item (a
-- condition with one task) gives no interval (an empty list): every
-- resample is that item, and a zero-width interval would claim a certainty
-- that one task cannot give.
function M.bootstrap(items, stat, opts)
  opts = opts or {}
  if not opts.strata and #items < 2 then return {} end
  local B = opts.B or M.DEFAULT_B
  local level = opts.level or M.DEFAULT_LEVEL
  local rng = M.rng((opts.seed or M.DEFAULT_SEED) ~ fnv(opts.key or ""))
  local draws = {}
  local width
  for _ = 1, B do
    local sample
    if opts.strata then
      sample = {}
      for s, stratum in ipairs(items) do
        local n = #stratum
        local r = {}
        for i = 1, n do r[i] = stratum[rng:int(n)] end
        sample[s] = r
      end
    else
      -- Rng:int inlined (the same splitmix64 sequence): the resamples are
      -- the report's hot loop.
      local n = #items
      sample = {}
      local st = rng.state
      for i = 1, n do
        st = st + 0x9E3779B97F4A7C15
        local z = st
        z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
        z = (z ~ (z >> 27)) * 0x94D049BB133111EB
        z = z ~ (z >> 31)
        sample[i] = items[((z >> 1) % n) + 1]
      end
      rng.state = st
    end
    local v = stat(sample)
    if type(v) ~= "table" then v = { v, n = 1 } end
    width = width or v.n or #v
    for j = 1, width do
      draws[j] = draws[j] or {}
      if v[j] ~= nil then table.insert(draws[j], v[j]) end
    end
  end
  local out = {}
  for j = 1, width or 0 do
    table.sort(draws[j])
    local lo, hi = interval(draws[j], level)
    out[j] = { lo, hi }
  end
  return out
end

return M
