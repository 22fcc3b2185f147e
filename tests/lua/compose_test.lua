-- Tests of klab.task.compose: composed tasks (tasks/fused/) and their errors.
local task = require("klab.task")
local compose = require("klab.task.compose")

local T = {}

local function lib(t) return { root = t.root .. "/tasks" } end

-- A composed task file in a fresh folder; returns its path.
local function file(t, body)
  local dir = t.tmpdir() .. "/mine"
  assert(require("klab.sys").mkdir(dir))
  local path = dir .. "/c.lua"
  local f = assert(io.open(path, "w"))
  f:write('name = "c"\nvariants = { { M = 8, N = 64, K = 32 } }\n' .. body .. "\n")
  f:close()
  return path
end

local function load_err(path)
  local ok, err = pcall(task.load, path, { reload = true })
  return not ok and tostring(err) or nil
end

function T.a_chain_sets_every_field(t)
  local x = task.get("matmul_subtract_multiply_relu/1024x8192x8192", lib(t))
  t.eq(x.family, "fused")
  t.eq(x.kernel, "fused")
  t.eq(table.concat(task.plain(x.compose.ops), ","), "linear,sub,scale,relu")
  t.eq(table.concat(task.plain(x.buffers.X.shape), ","), "1024,8192")
  t.eq(table.concat(task.plain(x.buffers.W.shape), ","), "8192,8192")
  t.eq(table.concat(task.plain(x.buffers.bias.shape), ","), "8192")
  t.eq(table.concat(task.plain(x.buffers.Y.shape), ","), "1024,8192")
  t.eq(x.buffers.Y.dtype, "f32")
  -- 2MNK for the product, one FLOP per element for each of sub, scale, relu.
  t.eq(x.flops, 2 * 1024 * 8192 * 8192 + 3 * 1024 * 8192)
  t.eq(x.units.Y, 8192)
  t.eq(x.reference.sample, 16)
  t.eq(x.tolerance.f32.atol, 1e-3)
  t.eq(x.tolerance.f32.rtol, 1e-3)
  t.ok(x.compose.tolerance:find("KernelBench-Verified", 1, true), x.compose.tolerance)
  t.eq(x.baseline.kind, "shipped")
  t.eq(x.baseline.prologue.lib, "cublaslt")
  t.eq(x.baseline.prologue.c, "T")
  t.eq(x.baseline.prologue.spec.epilogue, "bias")
  -- One source of the library's own kernels, no CUDA of the task's.
  t.ok(x.reference.code:find("mm_ref_units", 1, true) and x.reference.code:find("chain_ref", 1, true)
    and x.reference.code:find("act_apply", 1, true), "the reference is the matmul, activation and chain sources")
  t.ok(x.baseline.code:find("chain_baseline", 1, true), "the baseline's kernel is chain.cu's")
  t.ok(x.description:find("2. sub: x = x - 2", 1, true), x.description)
  t.ok(x.description:find("Here M=1024, N=8192, K=8192", 1, true), "the description's dimensions are expanded")
end

function T.widths_follow_the_chain(t)
  local s = task.get("gemm_divide_sum_scaling/1024x8192x8192", lib(t))
  t.eq(s.buffers.bias, nil)
  t.eq(table.concat(task.plain(s.buffers.Y.shape), ","), "1024,1")
  t.eq(s.baseline.prologue.spec.epilogue, "none")
  -- div and sum read every element; the scale one value per row.
  t.eq(s.flops, 2 * 1024 * 8192 * 8192 + 2 * 1024 * 8192 + 1024)
  local p = task.get("matmul_avgpool_gelu_scale_max/1024x8192x8192", lib(t))
  t.eq(table.concat(task.plain(p.buffers.Y.shape), ","), "1024,1")
  t.eq(p.flops, 2 * 1024 * 8192 * 8192 + 1024 * 8192 + (5 + 1 + 1) * 1024 * (8192 // 16))
  local x = task.get("gemm_subtract_globalavgpool_logsumexp_gelu_residualadd/2048x8192x8192", lib(t))
  t.eq(table.concat(task.plain(x.buffers.Y.shape), ","), "2048,8192")
  t.eq(x.buffers.subtract.shape[1], 8192)
  local m = task.get("bmm_instancenorm_sum_residualadd_multiply/1024x8192x8192", lib(t))
  t.eq(table.concat(task.plain(m.buffers.y.shape), ","), "1024,8192")
  local sm = task.get("matmul_gelu_softmax/1024x8192x8192", lib(t))
  t.eq(sm.tolerance.f32.atol, 1e-7)
end

function T.the_library_has_thirty_composed_tasks(t)
  local q = require("klab.command").shell_quote
  local code, out = t.sh("cd " .. q(t.root) .. " && " .. q(t.klab) .. " tasks --json --family fused")
  t.eq(code, 0, out)
  local list = require("klab.json").decode(out)
  local bases = {}
  for _, x in ipairs(list) do
    t.ok(type(x.compose) == "table" and x.compose.ops[1]:match("^linear"), x.name .. " has compose.ops")
    bases[x.base] = true
  end
  local n = 0
  for _ in pairs(bases) do n = n + 1 end
  t.ok(n >= 30, n .. " composed tasks")
end

-- sub_vec subtracts its vector (KernelBench Level 2, problem 51): chain.cu's
-- vector add with b = 1, which it reads as x - v[j]; add_vec keeps b = 0.
function T.sub_vec_subtracts_its_vector(t)
  local path = file(t, 'compose = { ops.linear{}, ops.sub_vec{ name = "s" }, ops.add_vec{ name = "v" } }')
  local x = task.load(path, { reload = true }).tasks[1]
  t.eq(x.buffers.s.shape[1], 64)
  local vec_add = compose.CODES.chain.vec_add
  t.match(x.reference.plan, ("i32%%(%d%%), f64%%(0%%), f64%%(1%%)"):format(vec_add), "sub_vec passes b = 1")
  t.match(x.reference.plan, ("i32%%(%d%%), f64%%(1%%), f64%%(0%%)"):format(vec_add), "add_vec passes b = 0")
  t.match(x.description, "sub_vec: x = x %- s%[j%]")
  local cu = assert(io.open(t.root .. "/tasks/fused/chain.cu")):read("a")
  t.match(cu, "case CH_VEC_ADD: {.-x = b == %(R%)0 %? x %+ v : x %- v;", "chain.cu subtracts when b = 1")
end

-- The op codes klab.task.compose writes into plans are chain.cu's and the
-- activation reference's enum values.
function T.codes_match_the_kernels(t)
  local function enums(path, prefix)
    local text = assert(io.open(t.root .. "/" .. path)):read("a")
    local out = {}
    for name, v in text:gmatch(prefix .. "([%u_]+) = (%d+)") do out[name:lower()] = tonumber(v) end
    return out
  end
  local ch = enums("tasks/fused/chain.cu", "CH_")
  for name, code in pairs(compose.CODES.chain) do
    t.eq(ch[name], code, "CH_" .. name:upper())
  end
  local act = enums("tasks/activation/reference.cu", "ACT_")
  local alias = { gelu = "gelu_erf" }
  for name, code in pairs(compose.CODES.act) do
    t.eq(act[alias[name] or name], code, "ACT_" .. (alias[name] or name):upper())
  end
end

function T.mistakes_name_the_file_and_the_op(t)
  local e = load_err(file(t, "compose = { ops.linear{}, ops.relux{} }"))
  t.ok(e and e:find("c.lua: field 'compose[2]': unknown operation 'relux'", 1, true), e)
  e = load_err(file(t, "compose = { ops.relu{}, ops.linear{} }"))
  t.ok(e and e:find("field 'compose[1]': must be ops.linear{}", 1, true), e)
  e = load_err(file(t, "compose = { ops.linear{}, ops.relu{} }\nbuffers = {}"))
  t.ok(e and e:find("field 'buffers': is set by compose", 1, true), e)
  e = load_err(file(t, "compose = { ops.linear{}, ops.groupnorm{ 5 } }"))
  t.ok(e and e:find("N = 64 is not a multiple of groupnorm's 5 groups", 1, true), e)
  e = load_err(file(t, "compose = { ops.linear{}, ops.sum{}, ops.residual{} }"))
  t.ok(e and e:find("field 'compose[3]': residual needs the full row", 1, true), e)
  e = load_err(file(t, "compose = { ops.linear{}, ops.add_x{} }"))
  t.ok(e and e:find("add_x needs a row of one value", 1, true), e)
  e = load_err(file(t, "compose = { ops.linear{}, ops.leaky_relu{ 'x' } }"))
  t.ok(e and e:find("compose[2].slope", 1, true), e)
  e = load_err(file(t, "compose = { ops.linear{}, ops.div{ 0 } }"))
  t.ok(e and e:find("div by 0", 1, true), e)
  e = load_err(file(t, "compose = { ops.linear{}, ops.add_vec{ name = 'X' } }"))
  t.ok(e and e:find("buffer 'X' is taken", 1, true), e)
  local nine = {}
  for i = 1, 9 do nine[i] = "ops.relu{}" end
  e = load_err(file(t, "compose = { ops.linear{}, " .. table.concat(nine, ", ") .. " }"))
  t.ok(e and e:find("at most 8 operations", 1, true), e)
  -- The same input twice is one buffer.
  local ok, d = pcall(task.load, file(t, "compose = { ops.linear{}, ops.add_mat{ name = 'y' }, ops.mul_mat{ name = 'y' } }"),
    { reload = true })
  t.ok(ok, tostring(d))
  if ok then t.eq(table.concat(task.plain(d.tasks[1].buffers.y.shape), ","), "8,64") end
end

return T
