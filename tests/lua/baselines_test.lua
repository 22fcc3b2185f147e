-- baselines_test.lua: a baseline is one file of scripts/klab/eval/baselines/
-- and its name in klab.eval.baselines.NAMES; the baseline stage, a shipped
-- kernel's prologue, `klab tasks --check` and klab eval's summary ask that
-- registry. No GPU: the checks here are the ones `klab tasks --check` runs.
local T = {}

local baselines = require "klab.eval.baselines"

function T.a_baseline_is_found_by_its_registered_name(t)
  t.eq(baselines.get("cublaslt").title, "cuBLASLt")
  t.eq(baselines.title("cudnn"), "cuDNN")
  t.eq(baselines.title("baseline"), "baseline", "an unknown name is said as it is")
  local b, why = baselines.get("cublas")
  t.eq(b, nil)
  t.match(why, "no baseline library 'cublas' %(did you mean 'cublaslt'%?%) %(klab has cublaslt, cudnn, shipped%)")
  -- A name that is a file of the folder but not a baseline is not one.
  t.eq(baselines.get("init"), nil)
  t.eq(baselines.of { baseline = { kind = "shipped", source = "b.cu" } }, "shipped")
  t.eq(baselines.of { baseline = { kind = "library", lib = "cudnn" } }, "cudnn")
end

-- `klab tasks --check` asks the task's baseline for its check: a library it
-- does not know is the task's mistake in baseline.lib; a shipped kernel's
-- library prologue is checked as that library's and named baseline.prologue.
function T.the_check_is_the_baselines_own(t)
  local ok, why, field = baselines.check { name = "x", baseline = { kind = "library", lib = "cublas", op = "matmul" } }
  t.eq(ok, nil)
  t.match(why, "no baseline library 'cublas'")
  t.eq(field, "baseline.lib")
  ok, why, field = baselines.check { name = "x", dims = {}, buffers = {},
    baseline = { kind = "shipped", source = "b.cu", prologue = { lib = "cublaslt", op = "conv" } } }
  t.eq(ok, nil)
  t.match(why, "^the cuBLASLt matmul does not describe: unknown op 'conv'")
  t.eq(field, "baseline.prologue")
  t.eq(baselines.check { name = "x", baseline = { kind = "library", lib = "cudnn", op = "sdpa_fwd" } }, true,
    "cuDNN checks only its graphs without a GPU")
  t.eq(baselines.check { name = "x", baseline = { kind = "shipped", source = "b.cu" } }, true)
end

-- A baseline registered in this process (one module, one row) is used.
function T.a_registered_baseline_is_asked(t)
  local asked = {}
  package.loaded["klab.eval.baselines.fake"] = { title = "Fake BLAS",
    check = function(task) asked[#asked + 1] = task.name; return nil, "fake says no", "baseline.op" end,
    prepare = function() return nil, "no GPU here" end }
  baselines.NAMES[#baselines.NAMES + 1] = "fake"
  local okc, err = pcall(function()
    t.eq(baselines.title("fake"), "Fake BLAS")
    local ok, why, field = baselines.check { name = "v", baseline = { kind = "library", lib = "fake" } }
    t.eq(ok, nil)
    t.eq(why, "fake says no")
    t.eq(field, "baseline.op")
    t.eq(asked[1], "v")
  end)
  table.remove(baselines.NAMES)
  package.loaded["klab.eval.baselines.fake"] = nil
  if not okc then error(err, 0) end
  t.eq(baselines.get("fake"), nil, "taken out again")
end

return T
