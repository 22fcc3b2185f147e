-- klab.task.record: a task as a plain record, the one `klab tasks --json`
-- prints and `klab mcp`'s describe_task answers: its name, dimensions,
-- buffers (role, dtype, shape, layout, bytes), FLOPs, targets, tags,
-- baseline, tolerance, the description a model reads and the default plan.
--
--   record.of(t)       -> the record of task descriptor t
--   record.dtypes(t)   -> "in1,in2", "out" (the buffers' dtypes, in order)

local task = require "klab.task"

local M = {}

function M.dtypes(t)
  local ins, outs = {}, {}
  local seen_in, seen_out = {}, {}
  for _, name in ipairs(t.buffer_order) do
    local b = t.buffers[name]
    if b.role == "input" and not seen_in[b.dtype] then
      seen_in[b.dtype] = true
      ins[#ins + 1] = b.dtype
    elseif b.role == "output" and not seen_out[b.dtype] then
      seen_out[b.dtype] = true
      outs[#outs + 1] = b.dtype
    end
  end
  return table.concat(ins, ","), table.concat(outs, ",")
end

function M.of(t)
  local ins, outs = M.dtypes(t)
  local buffers = {}
  for _, name in ipairs(t.buffer_order) do
    local b = t.buffers[name]
    buffers[#buffers + 1] = { name = name, role = b.role, dtype = b.dtype, shape = task.plain(b.shape),
      layout = b.layout, bytes = b.bytes }
  end
  return {
    name = t.name, base = t.base, variant = t.variant, family = t.family, file = t.file,
    dims = task.plain(t.dims), dim_order = task.plain(t.dim_order), inputs = ins, outputs = outs,
    buffers = buffers, flops = t.flops, bytes = t.bytes, targets = task.plain(t.targets),
    tags = task.plain(t.tags), baseline = task.plain(t.baseline), tolerance = task.plain(t.tolerance),
    -- A composed task's chain (klab.task.compose): ops, tolerance, baseline.
    compose = t.compose and task.plain(t.compose) or nil,
    -- What a model reads of the task (klab prompt shows the whole message)
    -- and the default launch plan it may rely on.
    description = t.description, plan = t.plan,
  }
end

return M
