-- klab.eval.pool: the worker processes of an evaluation session and the
-- jobs in flight on them: one supervisor per GPU (its worker pinned to that
-- device with CUDA_VISIBLE_DEVICES), optionally several sharing one GPU, and
-- optionally CPU workers that run the caller's stages (compiles, plans) in
-- parallel so that no GPU waits for a build. Nothing here judges anything:
-- klab.eval runs the pipeline and hands jobs to the pool.
--
--   local pool = require("klab.eval.pool").new{gpus = "all"|n|{ids}, per_gpu = 1, cpu = 0,
--                                             deadline = 180, env = {...}}
--   pool_mod.default_cpu()    -> the CPU workers to ask for by default
--   pool:devices()            -> {{index=, name=, ...}} the GPUs the pool uses (asks a worker once)
--   pool:submit("gpu"|"cpu", job, {deadline=, affinity=}) -> handle
--   pool:poll(timeout_s)      -> the handles that finished, each with .report (klab.proc.supervisor's)
--   pool:has(kind), pool:slots(kind), pool:queued(kind)
--   pool:close()
--
-- A handle is {kind=, job=, deadline=, affinity=, slot=, report=}. GPU jobs
-- go to an idle worker, preferring one whose last job had the same affinity
-- (a task: its inputs, references and baseline are cached in that worker).
-- A worker that died is replaced by its supervisor on its next job; the
-- others go on.

local supervisor = require "klab.proc.supervisor"
local worker = require "klab.worker"

local M = {}

local Pool = {}
Pool.__index = Pool

-- CPU workers by default: the cores this process may use, less one for
-- this process, at most 8 (compiles are short; more would only queue on
-- the GPUs).
function M.default_cpu()
  return math.max(1, math.min(8, require("klab.sys").cpu_count() - 1))
end

function M.new(opts)
  opts = opts or {}
  local p = setmetatable({ opts = opts, deadline = opts.deadline or 180, queue = {}, gpu_slots = nil,
    cpu_slots = {}, inflight = {} }, Pool)
  for i = 1, math.max(0, math.floor(opts.cpu or 0)) do
    -- A CPU worker never touches CUDA: it compiles and plans.
    p.cpu_slots[i] = { sup = supervisor.new { deadline = p.deadline, env = opts.env }, kind = "cpu", index = i }
  end
  return p
end

-- The devices as one worker sees them (CUDA_VISIBLE_DEVICES as inherited),
-- asked once, from the first GPU worker, which then serves as device 0's.
-- probe_start() sends the question and returns at once, so that the
-- answer comes while builds run; devices_known() is the answer when it has
-- come (nil before, never waiting); devices() waits for it.
local PROBE = { module = "klab.eval.gpu", fn = "describe", args = { all = true } }

function Pool:probe_start()
  if self._devices or self._probing then return end
  local probe = supervisor.new { deadline = self.deadline, env = self.opts.env }
  self._probe = probe
  local ok, rep = probe:start(PROBE, { deadline = 60 })
  if ok then
    self._probing = true
  else
    self._devices = { none = tostring(rep.error or rep.status) }
  end
end

function Pool:devices_known()
  if self._probing then
    local rep = self._probe:step()
    if not rep and not self._probe:busy() then rep = { status = "error", error = "the probe's worker stopped" } end
    if rep then
      self._probing = nil
      self._devices = rep.status == "finished" and rep.result or { none = tostring(rep.error or rep.status) }
    end
  end
  return self._devices
end

function Pool:devices()
  self:probe_start()
  while not self:devices_known() do worker.wait({ self._probe:handle() }, 0.5) end
  return self._devices
end

-- CUDA_VISIBLE_DEVICES for device ordinal i of this process's view.
local function visible_for(i)
  local inherited = os.getenv("CUDA_VISIBLE_DEVICES")
  if inherited and inherited ~= "" then
    local list = {}
    for x in inherited:gmatch("[^,]+") do list[#list + 1] = x end
    return list[i + 1] or tostring(i)
  end
  return tostring(i)
end

-- The GPU workers, made on first use: every device (gpus = "all"), the
-- first n, or the listed ordinals; per_gpu workers each. Without a GPU, one
-- worker that will say so.
function Pool:_gpus()
  if self.gpu_slots then return self.gpu_slots end
  local d = self:devices()
  local want = self.opts.gpus or "all"
  local ids = {}
  local n = d.count or 0
  if type(want) == "table" then
    for _, i in ipairs(want) do ids[#ids + 1] = i end
  else
    local k = want == "all" and n or math.min(n, math.floor(tonumber(want) or 1))
    for i = 0, k - 1 do ids[#ids + 1] = i end
  end
  -- No device: one worker all the same, which says why its stages cannot run.
  if #ids == 0 then ids[1] = 0 end
  self.gpu_slots = {}
  if #ids <= 1 and (self.opts.per_gpu or 1) <= 1 then
    -- One worker on the first device: the probe serves (it already started CUDA).
    self.gpu_slots[1] = { sup = self._probe, kind = "gpu", device = ids[1] or 0, index = 1 }
    self._probe = nil
    return self.gpu_slots
  end
  for _, dev in ipairs(ids) do
    for _ = 1, math.max(1, self.opts.per_gpu or 1) do
      local env = {}
      for k, v in pairs(self.opts.env or {}) do env[k] = v end
      env.CUDA_VISIBLE_DEVICES = visible_for(dev)
      -- Workers sharing a device take turns on its exclusive stages
      -- (instructions, timing) through a lock named after the device.
      if (self.opts.per_gpu or 1) > 1 then env.KLAB_GPU_LOCK = "device-" .. visible_for(dev) end
      local slot = { sup = supervisor.new { deadline = self.deadline, env = env }, kind = "gpu", device = dev,
        index = #self.gpu_slots + 1 }
      self.gpu_slots[#self.gpu_slots + 1] = slot
    end
  end
  if self._probe then
    self._probe:close()
    self._probe = nil
  end
  return self.gpu_slots
end

-- o.alone = a device: the job runs on that device with nothing else there
-- (to tell a candidate's own fault from a neighbour's); jobs queued after
-- it wait for that device meanwhile. A handle's `shared` says whether
-- another job ran on its device at some time while it ran.
function Pool:submit(kind, job, o)
  o = o or {}
  local h = { kind = kind, job = job, deadline = o.deadline or self.deadline, affinity = o.affinity, alone = o.alone }
  self.queue[#self.queue + 1] = h
  return h
end

local function slots_of(self, kind)
  return kind == "gpu" and self:_gpus() or self.cpu_slots
end

-- Whether the pool has workers of that kind ("cpu": any were asked for).
function Pool:has(kind)
  if kind == "cpu" then return #self.cpu_slots > 0 end
  return true
end

-- The number of workers of that kind.
function Pool:slots(kind)
  return #slots_of(self, kind)
end

-- The jobs of that kind waiting for a worker.
function Pool:queued(kind)
  local n = 0
  for _, h in ipairs(self.queue) do
    if h.kind == kind then n = n + 1 end
  end
  return n
end

-- Starts queued jobs on idle workers, in order; a GPU job prefers the
-- worker its affinity last ran on, when that one is idle.
function Pool:_dispatch(done)
  -- Jobs on each device now, and the devices held for a job that runs alone.
  local busy, held = {}, {}
  for _, s in ipairs(self.inflight) do
    if s.kind == "gpu" then
      busy[s.device] = (busy[s.device] or 0) + 1
      if s.handle.alone ~= nil then held[s.device] = true end
    end
  end
  for _, h in ipairs(self.queue) do
    if h.alone ~= nil then held[h.alone] = true end
  end
  local function fits(h, s)
    if s.handle then return false end
    if h.kind ~= "gpu" then return true end
    if h.alone ~= nil then return s.device == h.alone and (busy[s.device] or 0) == 0 end
    return not held[s.device]
  end
  local i = 1
  while i <= #self.queue do
    local h = self.queue[i]
    local slots = slots_of(self, h.kind)
    local pick
    for _, s in ipairs(slots) do
      if fits(h, s) and h.affinity ~= nil and s.last == h.affinity then pick = s break end
    end
    if not pick then
      for _, s in ipairs(slots) do
        if fits(h, s) then pick = s break end
      end
    end
    if pick then
      table.remove(self.queue, i)
      local ok, rep = pick.sup:start(h.job, { deadline = h.deadline })
      h.slot, h.device = pick.index, pick.device
      if ok then
        pick.handle, pick.last = h, h.affinity
        if h.kind == "gpu" then
          -- Neighbours on one device: each may be disturbed by the other's fault.
          if (busy[pick.device] or 0) > 0 then
            h.shared = true
            for _, o in ipairs(self.inflight) do
              if o.kind == "gpu" and o.device == pick.device then o.handle.shared = true end
            end
          end
          busy[pick.device] = (busy[pick.device] or 0) + 1
          if h.alone ~= nil then held[pick.device] = true end
        end
        self.inflight[#self.inflight + 1] = pick
      else
        h.report = rep
        done[#done + 1] = h
      end
    else
      i = i + 1
    end
  end
end

-- Steps every busy worker; the jobs that ended go to done.
function Pool:_collect(done)
  local i = 1
  while i <= #self.inflight do
    local s = self.inflight[i]
    local rep = s.sup:step()
    if not rep and not s.sup:busy() then
      -- The worker was taken away while it had the job (retired or
      -- closed): the job ends here rather than waiting forever.
      rep = { status = "error", error = "the worker was stopped while it ran the job" }
    end
    if rep then
      s.handle.report = rep
      done[#done + 1] = s.handle
      s.handle = nil
      table.remove(self.inflight, i)
    else
      i = i + 1
    end
  end
end

-- Advances every job: starts what can start, collects what ended, and
-- waits up to timeout_s (0: not at all) for something to happen when
-- nothing ended yet. Returns the handles that finished. Nothing starts on
-- a worker between its job's end and the caller's look at the result: a
-- result may ask for the worker to be retired (unfit after a sticky CUDA
-- error), and the next job must not run on it.
function Pool:poll(timeout_s)
  local done = {}
  self:_dispatch(done)
  self:_collect(done)
  if #done == 0 and (#self.inflight > 0 or self._probing) and (timeout_s or 0) > 0 then
    local ws = {}
    for _, s in ipairs(self.inflight) do ws[#ws + 1] = s.sup:handle() end
    if self._probing then ws[#ws + 1] = self._probe:handle() end
    worker.wait(ws, timeout_s)
    self:_collect(done)
  end
  return done
end

function Pool:pending()
  return #self.queue + #self.inflight
end

-- Kills the worker of a GPU slot so that its next job starts a new one (a
-- job left it unfit: a sticky CUDA error).
function Pool:retire(slot_index)
  local s = (self.gpu_slots or {})[slot_index]
  if s then s.sup:retire() end
end

function Pool:close()
  for _, s in ipairs(self.gpu_slots or {}) do s.sup:close() end
  for _, s in ipairs(self.cpu_slots) do s.sup:close() end
  if self._probe then self._probe:close() end
  self.gpu_slots, self.cpu_slots, self.inflight, self.queue, self._probe = {}, {}, {}, {}, nil
end

Pool.__close = Pool.close
Pool.__gc = Pool.close

return M
