-- Input sets when device memory runs short (klab.eval.inputs): a set that
-- does not fit beside the kept ones is made again after the states of other
-- tasks and this task's other sets are freed; sets the caller holds stay;
-- the first set is made again when it was freed. The device is a fake with
-- a byte budget, so this runs without a GPU.
local T = {}

local S = require("klab.eval.worker_state").S
local inputs = require "klab.eval.inputs"

-- A fake context whose allocations fail with ENOMEM past `budget` bytes,
-- and judge kernels that do nothing; restores the real state after fn.
local function with_fake_device(budget, fn)
  local saved = { ctx = S.ctx, judge = S.judge, tasks = S.tasks }
  local used = 0
  local fake_ctx = {}
  function fake_ctx:alloc(bytes)
    if used + bytes > budget then
      return nil, ("cuMemAlloc(%d bytes): CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"):format(bytes), "ENOMEM"
    end
    used = used + bytes
    local b = { bytes = bytes, freed = false }
    function b:ptr() return 4096 end
    function b:size() return self.bytes end
    function b:free()
      if not self.freed then
        self.freed = true
        used = used - self.bytes
      end
    end
    return b
  end
  function fake_ctx:sync() return true end
  local fake_judge = {}
  function fake_judge:pattern() return true end
  function fake_judge:fill() return true end
  function fake_judge:checksum() return 7 end
  S.ctx, S.judge, S.tasks = fake_ctx, fake_judge, {}
  local ok, err = pcall(fn, function() return used end)
  S.ctx, S.judge, S.tasks = saved.ctx, saved.judge, saved.tasks
  if not ok then error(err, 0) end
end

local MB = 1 << 20

-- A task of one input of `bytes`; its trials are sampled (no reference).
local function job_of(name, bytes, ntrials)
  local trials = {}
  for i = 1, ntrials do trials[i] = { seed = ("%016x"):format(i), sampled = true } end
  return {
    seed = "00000000000000aa",
    task = { name = name, buffers = { { name = "x", role = "input", bytes = bytes, count = bytes // 4, dtype = "f32", index = 1 } } },
    trials = trials,
    reference = {},
  }
end

local function count(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

function T.a_set_that_does_not_fit_frees_the_kept_ones_first(t)
  -- Room for two sets of 100 MB (and their guards), not three.
  with_fake_device(250 * MB, function(used)
    local job = job_of("big", 100 * MB, 3)
    local ts = inputs.task_state(job)
    local a = assert(inputs.input_set(job.task, ts, job.trials[1]))
    local b = assert(inputs.input_set(job.task, ts, job.trials[2]))
    t.eq(count(ts.inputs), 2, "both sets kept while they fit")
    local c, err, code = inputs.input_set(job.task, ts, job.trials[3])
    t.ok(c ~= nil, "the third set is made once the others are freed: " .. tostring(err) .. " " .. tostring(code))
    t.eq(count(ts.inputs), 1, "only the new set is kept")
    t.ok(a.bufs.x == nil or a.bufs.x.buf.freed, "the first set's buffer was freed")
    t.ok(b.bufs.x.buf.freed, "the second set's buffer was freed")
    t.ok(used() <= 250 * MB, "within the budget")
  end)
end

function T.sets_the_caller_holds_stay(t)
  with_fake_device(250 * MB, function()
    local job = job_of("big", 100 * MB, 3)
    local ts = inputs.task_state(job)
    local a = assert(inputs.input_set(job.task, ts, job.trials[1]))
    local b = assert(inputs.input_set(job.task, ts, job.trials[2]))
    local c = assert(inputs.input_set(job.task, ts, job.trials[3], { [b] = true }))
    t.ok(a.bufs.x.buf.freed, "the set not held was freed")
    t.ok(not b.bufs.x.buf.freed, "the held set stays")
    t.ok(ts.inputs[b.key] == b and ts.inputs[c.key] == c, "held and new sets are kept")
  end)
end

function T.other_tasks_go_before_a_set_fails(t)
  with_fake_device(250 * MB, function()
    local other = job_of("other", 200 * MB, 1)
    local ots = inputs.task_state(other)
    local o = assert(inputs.input_set(other.task, ots, other.trials[1]))
    local job = job_of("big", 100 * MB, 1)
    local ts = inputs.task_state(job)
    assert(inputs.input_set(job.task, ts, job.trials[1]))
    t.ok(o.bufs.x.buf.freed, "the other task's set was freed")
    t.eq(S.tasks.other, nil, "the other task's state is gone")
  end)
end

function T.a_set_larger_than_the_device_still_fails_with_the_reason(t)
  with_fake_device(50 * MB, function()
    local job = job_of("huge", 100 * MB, 1)
    local ts = inputs.task_state(job)
    local set, err, code = inputs.input_set(job.task, ts, job.trials[1])
    t.eq(set, nil)
    t.eq(code, "ENOMEM")
    t.match(err, "out of memory")
  end)
end

function T.the_first_set_is_made_again_once_freed(t)
  with_fake_device(250 * MB, function()
    local job = job_of("big", 100 * MB, 3)
    local ts = inputs.task_state(job)
    local run = { job = job, ts = ts }
    run.first_set = assert(inputs.input_set(job.task, ts, job.trials[1]))
    assert(inputs.input_set(job.task, ts, job.trials[2]))
    assert(inputs.input_set(job.task, ts, job.trials[3]))
    local again = assert(inputs.first_set(run))
    t.ok(not again.bufs.x.buf.freed, "a live set, not the freed one")
    t.ok(ts.inputs[again.key] == again, "kept again")
  end)
end

return T
