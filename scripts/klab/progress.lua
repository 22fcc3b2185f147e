-- klab.progress: a progress bar on a terminal, plain lines otherwise.
--
--   local p = progress.new{total = 96, label = "turns", out = io.stderr, mode = "auto", interval = 5}
--   p:update{done = 12, total = 90, counts = {passed = 3, compile_error = 2}, note = "3 in flight"}
--   p:finish()
--
-- mode: "auto" (a bar when out is stderr and stderr is a terminal, plain
-- lines otherwise), "bar", "plain" or "off". A bar redraws one line in
-- place at most every 0.1 s; plain mode writes a line when `interval`
-- seconds passed since the last one, and once at the end. The estimate of
-- time left is the mean time per finished unit times the units left, from
-- the units finished by this run (resumed work does not count as speed).
-- The total may shrink while running (early stops).

local sys = require "klab.sys"

local M = {}

local P = {}
P.__index = P

local function stderr_is_tty() return sys.isatty(2) end

function M.new(opts)
  opts = opts or {}
  local out = opts.out or io.stderr
  local mode = opts.mode
  if mode == nil or mode == true then mode = "auto" elseif mode == false then mode = "off" end
  if mode == "auto" then
    mode = (out == io.stderr and stderr_is_tty()) and "bar" or "plain"
  end
  return setmetatable({
    out = out, mode = mode, label = opts.label or "done", total = opts.total or 0, done = 0, counts = {},
    t0 = sys.now(), last = -math.huge, interval = opts.interval or 5, width = opts.width or 24, start_done = nil,
  }, P)
end

local function fmt_time(s)
  if not s or s ~= s or s == math.huge then return "?" end
  s = math.floor(s + 0.5)
  if s >= 3600 then return ("%dh%02dm"):format(s // 3600, (s % 3600) // 60) end
  if s >= 60 then return ("%dm%02ds"):format(s // 60, s % 60) end
  return ("%ds"):format(s)
end
M.fmt_time = fmt_time

function P:eta()
  local ran = self.done - (self.start_done or 0)
  if ran <= 0 then return nil end
  local left = math.max(0, self.total - self.done)
  return (sys.now() - self.t0) / ran * left
end

function P:line()
  local names = {}
  for k, v in pairs(self.counts) do if v > 0 then names[#names + 1] = k end end
  table.sort(names)
  local parts = {}
  for _, k in ipairs(names) do parts[#parts + 1] = k .. "=" .. self.counts[k] end
  local head = ("%s %d/%d"):format(self.label, self.done, self.total)
  if self.mode == "bar" then
    local frac = self.total > 0 and math.min(1, self.done / self.total) or 0
    local fill = math.floor(frac * self.width + 0.5)
    head = "[" .. ("#"):rep(fill) .. ("."):rep(self.width - fill) .. "] " .. head
  end
  local eta = self:eta()
  local tail = ("  elapsed %s"):format(fmt_time(sys.now() - self.t0))
  if self.done < self.total then tail = tail .. ", left ~" .. fmt_time(eta) end
  -- The label and the note may name an experiment of a store: shown escaped.
  return require("klab.report.escape").terminal(head .. (#parts > 0 and ("  " .. table.concat(parts, " ")) or "")
    .. (self.note and ("  " .. self.note) or "") .. tail)
end

function P:update(u)
  u = u or {}
  if u.total then self.total = u.total end
  if u.done then
    if not self.start_done then self.start_done = u.done end
    self.done = u.done
  end
  if u.counts then self.counts = u.counts end
  self.note = u.note
  if u.start_done then self.start_done = u.start_done end
  if self.mode == "off" then return end
  local now = sys.now()
  if self.mode == "bar" then
    if now - self.last >= 0.1 or u.force then
      self.out:write("\r\27[K", self:line())
      self.out:flush()
      self.last = now
    end
  elseif now - self.last >= self.interval or u.force then
    self.out:write(self:line(), "\n")
    self.out:flush()
    self.last = now
  end
end

function P:finish()
  if self.mode == "off" then return end
  if self.mode == "bar" then
    self.out:write("\r\27[K", self:line(), "\n")
  else
    self.out:write(self:line(), "\n")
  end
  self.out:flush()
end

return M
