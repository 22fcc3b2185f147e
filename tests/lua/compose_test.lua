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

-- A composed task file after a 2-D convolution in a fresh folder; returns
-- its path.
local function conv_file(t, body)
  local dir = t.tmpdir() .. "/cv"
  require("klab.sys").mkdir(dir)
  local path = dir .. "/c.lua"
  local f = assert(io.open(path, "w"))
  f:write('name = "c"\nvariants = { { N = 2, C = 3, H = 8, W = 9, K = 4 } }\n' .. body .. "\n")
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
    t.ok(type(x.compose) == "table" and (x.compose.ops[1]:match("^linear") or x.compose.ops[1]:match("^conv")),
      x.name .. " has compose.ops")
    bases[x.base] = true
  end
  local n = 0
  for _ in pairs(bases) do n = n + 1 end
  t.ok(n >= 30, n .. " composed tasks")
end

-- A chain that starts with a convolution (KernelBench Level 2's Conv2d,
-- Conv3d and transposed chains): NCHW buffers in torch's layouts, the
-- convolution's bias as conv_bias, vectors one value per output channel,
-- a row one channel's plane; cuDNN's convolution described per variant.
function T.a_convolution_starts_a_chain(t)
  local x = task.get("conv2d_relu_biasadd/n3_c5_17x23_k6", lib(t))
  t.eq(table.concat(task.plain(x.compose.ops), ","), "conv2d,relu,add_vec")
  t.eq(table.concat(task.plain(x.buffers.x.shape), ","), "3,5,17,23")
  t.eq(table.concat(task.plain(x.buffers.w.shape), ","), "6,5,3,3")
  t.eq(table.concat(task.plain(x.buffers.conv_bias.shape), ","), "6")
  t.eq(table.concat(task.plain(x.buffers.bias.shape), ","), "6")
  t.eq(table.concat(task.plain(x.buffers.y.shape), ","), "3,6,15,21")
  -- A unit is one channel's plane; 2 FLOPs per tap, then relu and the add.
  t.eq(x.units.y, 15 * 21)
  t.eq(x.flops, 2 * 3 * 6 * 5 * 9 * 15 * 21 + 2 * 3 * 6 * 15 * 21)
  t.ok(x.reference.code:find("conv_ncdhw_ref64", 1, true) and x.reference.code:find("chain_ref", 1, true),
    "the reference is the convolution family's fp64 sums, then the chain")
  t.match(x.reference.plan, "u32%(K%), buffer%(\"bias\"%), i32%(0%)", "the channel count goes where add_x's K goes")
  local chan_add = compose.CODES.chain.chan_add
  t.match(x.reference.plan, ("i32%%(%d%%), f64%%(0%%), f64%%(0%%)"):format(chan_add), "add_vec adds per channel")
  t.match(x.baseline.plan, "chain_baseline_inplace")
  local p = x.baseline.prologue
  t.eq(p.lib, "cudnn")
  t.eq(p.c, "T")
  -- The graph is this variant's: the output plane of 17 x 23 by a 3 x 3 filter.
  t.eq(table.concat(task.plain(p.spec.tensors.T.dims), ","), "3,6,15,21")
  t.eq(p.spec.ops[1].op, "conv_fwd")
  t.ok(x.description:find("add_vec: x = x + bias[k]", 1, true), x.description)
  local tr = task.get("convtranspose2d_multiply_globalavgpool_globalavgpool_mean/n3_c5_9x13_k6", lib(t))
  t.eq(table.concat(task.plain(tr.buffers.w.shape), ","), "5,6,3,3")
  -- (9 - 1)·2 - 2 + 3 + 1 = 18 rows, 26 columns; two means make one value.
  t.eq(table.concat(task.plain(tr.baseline.prologue.spec.tensors.T.dims), ","), "3,6,18,26")
  t.eq(table.concat(task.plain(tr.buffers.y.shape), ","), "3,6,1")
  t.eq(tr.baseline.prologue.spec.ops[1].op, "conv_bwd_data")
  local d3 = task.get("convtranspose3d_clamp_min_divide/n2_c3_4x5x7_k4", lib(t))
  t.eq(table.concat(task.plain(d3.buffers.y.shape), ","), "2,4,7,9,13")
end

-- A pooling of the plane (MaxPool2d, AvgPool3d): windows per axis, the
-- tails dropped; chain.cu reads the plane's extents from b, which the plan
-- computes per variant.
function T.a_pool_shrinks_the_plane(t)
  local x = task.get("conv2d_subtract_hardswish_maxpool_mish/n3_c5_17x23_k6", lib(t))
  -- 15 x 21 by windows of 2: 7 x 10.
  t.eq(table.concat(task.plain(x.buffers.y.shape), ","), "3,6,7,10")
  t.eq(x.units.y, 70)
  local pool = compose.CODES.chain.plane_max
  t.match(x.reference.plan, ("i32%%(%d%%), f64%%(2%%), f64%%(2 %%* 4398046511104 %%+ %%(H%%-2%%) %%* 2097152 %%+ %%(W%%-2%%)%%)")
    :format(pool), "b is nd·2^42 + OH·2^21 + OW")
  -- sub, hardswish and the pool read 15 x 21; mish reads 7 x 10.
  t.eq(x.flops, 2 * 3 * 6 * 5 * 9 * 15 * 21 + (1 + 5 + 1) * 3 * 6 * 15 * 21 + 6 * 3 * 6 * 70)
  local v = task.get("convtranspose3d_scaling_avgpool_biasadd_scaling/n2_c3_4x5x7_k4", lib(t))
  t.eq(table.concat(task.plain(v.buffers.y.shape), ","), "2,4,3,4,6")
  local cu = assert(io.open(t.root .. "/tasks/fused/chain.cu")):read("a")
  t.match(cu, "nd = %(u32%)%(shape >> 42%), IH = %(u32%)%(%(shape >> 21%) & 0x1FFFFF%), IW = %(u32%)%(shape & 0x1FFFFF%)",
    "chain.cu decodes b as compose encodes it")
end

-- A reduction across a convolution's channels (torch.min(x, dim=1,
-- keepdim=True)): the steps before it run per channel plane, those after
-- it on the one plane left per image; y has one channel, a unit is an
-- image's plane, and the reference and the baseline reduce in chain.cu.
function T.a_chain_reduces_across_channels(t)
  local x = task.get("conv2d_min_tanh_tanh/n3_c5_17x23_k6", lib(t))
  t.eq(table.concat(task.plain(x.compose.ops), ","), "conv2d,channel_min,tanh,tanh")
  t.eq(table.concat(task.plain(x.buffers.y.shape), ","), "3,1,15,21")
  t.eq(x.units.y, 15 * 21)
  -- The taps over 3 x 6 planes; the minimum reads the 18 planes, each tanh
  -- the 3 left.
  t.eq(x.flops, 2 * 3 * 6 * 5 * 9 * 15 * 21 + 18 * 15 * 21 + 2 * 3 * 15 * 21)
  local min, tanh = compose.CODES.across.channel_min, compose.CODES.act.tanh
  t.match(x.reference.plan, ('"chain_across_ref".-i32%%(%d%%), workspace%%("V"%%)'):format(min),
    "the reference reduces by the minimum")
  t.match(x.baseline.plan, ('"chain_across_baseline".-i32%%(%d%%), workspace%%("V"%%)'):format(min),
    "the baseline reduces by the minimum")
  -- No step before the reduction; both tanh after it, on one channel.
  t.match(x.reference.plan, 'u32%(K%), u64%(0%), i32%(0%), u64%(0%), i32%(0%), i32%(0%)', "no step before it")
  t.match(x.reference.plan, ('u32%%(1%%), u64%%(0%%), i32%%(0%%), u64%%(0%%), i32%%(0%%), i32%%(2%%), i32%%(%d%%)')
    :format(tanh), "two tanh after it")
  t.match(x.plan, "grid = { N, 1, 1 }", "the default plan has a block per image")
  local cu = assert(io.open(t.root .. "/tasks/fused/chain.cu")):read("a")
  for name, code in pairs(compose.CODES.across) do
    t.match(cu, ("CH_ACROSS_%s = %d"):format(name:sub(9):upper(), code), "chain.cu's code of " .. name)
  end
  local pooled = task.get("convtranspose3d_max_max_sum/kb78", lib(t))
  -- 63 per axis, then windows of 2 (31) and of 3 (10).
  t.eq(table.concat(task.plain(pooled.buffers.y.shape), ","), "16,1,10,10,10")
end

function T.a_reduction_across_channels_is_refused_where_it_means_nothing(t)
  for _, c in ipairs {
    { file(t, "compose = { ops.linear{}, ops.channel_sum{} }"), "channel_sum reduces across a convolution's channels" },
    { conv_file(t, "compose = { ops.conv2d{ kernel = 3 }, ops.channel_max{}, ops.channel_min{} }"),
      "at most one reduction across channels" },
    { conv_file(t, "compose = { ops.conv2d{ kernel = 3 }, ops.channel_mean{}, ops.add_vec{ name = 'b' } }"),
      "add_vec reads one value per channel: after channel_mean one channel is left" },
  } do
    local e = load_err(c[1])
    t.ok(e and e:find(c[2], 1, true), e)
  end
end

function T.a_convolution_chain_refuses_what_needs_a_linear_row(t)
  local ok, d = pcall(task.load, conv_file(t, "compose = { ops.conv2d{ kernel = 3 }, ops.sub_vec{ name = 's' } }"),
    { reload = true })
  t.ok(ok, tostring(d))
  if ok then
    t.eq(table.concat(task.plain(d.tasks[1].buffers.s.shape), ","), "4")
    t.match(d.tasks[1].reference.plan, ("i32%%(%d%%), f64%%(0%%), f64%%(1%%)"):format(compose.CODES.chain.chan_add),
      "sub_vec after a convolution subtracts per channel")
  end
  local e = load_err(conv_file(t, "compose = { ops.conv2d{ kernel = 3 }, ops.maxpool3d{ 2 } }"))
  t.ok(e and e:find("maxpool3d needs the plane of a 3-D convolution before it", 1, true), e)
  e = load_err(conv_file(t, "compose = { ops.conv2d{ kernel = 3 }, ops.mean{}, ops.avgpool2d{ 2 } }"))
  t.ok(e and e:find("avgpool2d needs the plane of a 2-D convolution", 1, true), e)
  e = load_err(conv_file(t, "compose = { ops.conv2d{ kernel = 3 }, ops.maxpool{ 2 } }"))
  t.ok(e and e:find("compose[2]': maxpool does not follow a convolution", 1, true), e)
  e = load_err(conv_file(t, "compose = { ops.conv2d{ kernel = 3 }, ops.groupnorm{ 2 } }"))
  t.ok(e and e:find("groupnorm takes 1 group", 1, true), e)
  e = load_err(conv_file(t, "compose = { ops.conv2d{ kernel = 3, output_padding = 1 }, ops.relu{} }"))
  t.ok(e and e:find("compose[1].output_padding': only a transposed convolution has one", 1, true), e)
  e = load_err(conv_file(t, "compose = { ops.conv2d{ kernel = 3, dilation = 2 }, ops.relu{} }"))
  t.ok(e and e:find("compose[1].dilation': unknown argument of conv2d", 1, true), e)
  e = load_err(conv_file(t, "compose = { ops.conv2d{}, ops.relu{} }"))
  t.ok(e and e:find("conv2d needs kernel", 1, true), e)
  e = load_err(conv_file(t, "compose = { ops.conv2d{ kernel = 3 }, ops.add_vec{ name = 'conv_bias' } }"))
  t.ok(e and e:find("buffer 'conv_bias' is taken", 1, true), e)
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
  t.ok(e and e:find("field 'compose[1]': must be ops.linear{} or a convolution", 1, true), e)
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
