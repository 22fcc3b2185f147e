-- oracle_test.lua: a task's `oracle` (klab.task.oracle), offline: the
-- expression's text is checked token by token, a mistake names the task
-- file, every library task that claims a KernelBench problem exactly has
-- one, and the Python program that evaluates it (tests/gpu/oracle_check.lua
-- runs it with torch) is built from the variant's buffers.
local task = require "klab.task"
local oracle = require "klab.task.oracle"

local T = {}

local NAMES = { X = true, W = true, bias = true, C = true, torch = true, F = true }

function T.the_text_is_checked(t)
  for _, ok in ipairs {
    "F.layer_norm(X, (C,), W, bias, 1e-5)",
    "torch.cumsum(X.flip(1), dim=1).flip(1)",
    "(h := F.linear(X, W, bias)) * 0.5 + h",
    "torch.cat((torch.zeros_like(X[:, :1]), X[:, :-1]), dim=1)",
    "X ** 2 / .5e-3 if True else None",
  } do
    t.eq(oracle.problem(ok, NAMES), nil, ok)
  end
  for _, bad in ipairs {
    { "torch.load('w.pt')", "character ''' is not allowed" },
    { 'torch.load("w.pt")', "character '\"' is not allowed" },
    { "torch.load(X)", "the attribute 'load' is not allowed" },
    { "torch.hub.list(X)", "the attribute 'hub' is not allowed" },
    { "X.__class__", "'__class__': names may not start with '_'" },
    { "X._base", "'_base': names may not start with '_'" },
    { "__import__(X)", "names may not start with '_'" },
    { "open(X)", "'open' is not allowed" },
    { "lambda: X", "'lambda' is not allowed" },
    { "[X for X in X]", "'for' is not allowed" },
    { "os.system(X)", "unknown name 'os'" },
    { "Y + 1", "unknown name 'Y' %(an oracle sees C, F, W, X, bias, torch%)" },
    { "X +\n1", "character '\n' is not allowed" },
    { "torch.relu(X", "unbalanced brackets" },
    { "", "must be a non%-empty string" },
    { ("X + "):rep(600) .. "X", "is longer than 2000 characters" },
  } do
    t.match(oracle.problem(bad[1], NAMES) or "(accepted)", bad[2], bad[1])
  end
end

-- A task file's oracle: a string for one output, a table per output; a
-- mistake is a load error naming the file.
function T.a_bad_oracle_names_the_file(t)
  local q = require("klab.command").shell_quote
  local src = assert(t.read(t.root .. "/tasks/activation/relu.lua"))
  local cases = {
    { '"torch.load(X)"', "relu%.lua: field 'oracle': the attribute 'load' is not allowed" },
    { '{ Z = "X" }', "relu%.lua: field 'oracle': 'Z' is not an output of the task %(outputs: Y%)" },
    { "{}", "relu%.lua: field 'oracle%.Y': is missing" },
    { "3", "relu%.lua: field 'oracle': must be a PyTorch expression" },
    { '"torch.relu(Y)"', "relu%.lua: field 'oracle': unknown name 'Y'" },
  }
  for i, c in ipairs(cases) do
    local dir = t.tmpdir() .. "/case" .. i
    t.eq((t.sh(("mkdir -p %s && cp -r %s/tasks/activation %s/"):format(q(dir), q(t.root), q(dir)))), 0)
    local f = assert(io.open(dir .. "/activation/relu.lua", "w"))
    f:write((src:gsub("\noracle = [^\n]*", "\noracle = " .. c[1])))
    f:close()
    local _, errs = task.list(dir)
    t.match(table.concat(errs, "\n"), c[2], c[1])
  end
end

-- Every library task that claims a problem exactly carries an oracle, and
-- the program of its first variant builds.
function T.every_exact_task_has_an_oracle_whose_program_builds(t)
  local all, errs = task.list("tasks")
  t.eq(#errs, 0, table.concat(errs, "; "))
  local seen, n = {}, 0
  for _, x in ipairs(all) do
    local exact = false
    for _, c in ipairs(x.kernelbench or {}) do exact = exact or c.exact end
    if exact and not seen[x.base] then
      seen[x.base] = true
      n = n + 1
      if t.ok(x.oracle, x.base .. " has an oracle") then
        local text, err = oracle.program(x)
        t.ok(text, x.name .. ": " .. tostring(err))
      end
    end
  end
  t.ok(n >= 70, n .. " tasks claim a problem exactly")
end

-- The program of one variant: its inputs read with their dtypes and shapes,
-- the dimensions bound, the expression evaluated without builtins, the
-- output written in its own dtype; valid Python where python3 is found.
function T.the_program_reads_the_variant(t)
  local x = task.get("layernorm_f32/1001x1000", { root = t.root .. "/tasks" })
  local text = assert(oracle.program(x))
  t.match(text, '\nscope%["X"%] = load%("X", torch%.float32, %(1001, 1000%), "float"%)\n')
  t.match(text, '\nscope%["weight"%] = load%("weight", torch%.float32, %(1000,%), "float"%)\n')
  t.match(text, '\nscope%["C"%] = 1000\n')
  t.match(text, "\nsave%(\"Y\", eval%('F%.layer_norm%(X, %(C,%), weight, bias, 1e%-5%)', {'__builtins__': {}}, scope%), "
    .. "torch%.float32, %(1001, 1000%)%)\n")
  local g = task.get("groupnorm_bf16/3x30x17x19x5", { root = t.root .. "/tasks" })
  t.match(assert(oracle.program(g)), "torch%.bfloat16, %(3, 30, 17, 19%)%)\n$")
  local mc = task.get("masked_cumsum_f32/999x1021", { root = t.root .. "/tasks" })
  t.match(assert(oracle.program(mc)), 'load%("M", torch%.uint8, %(999, 1021%), "int"%)')
  local none = task.get("gemm_bf16/1000x1000x1000", { root = t.root .. "/tasks" })
  t.eq(select(2, oracle.program(none)), "gemm_bf16/1000x1000x1000 has no oracle")
  local py = require("klab.spawn").which("python3")
  if not py then return t.skip("no python3 here to parse the program") end
  local path = t.tmpdir() .. "/oracle.py"
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  local r = require("klab.spawn").run { argv = { py, "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())", path },
    stderr = "stdout", timeout = 30 }
  t.ok(r and r.ok, "the program parses: " .. tostring(r and r.stdout))
end

return T
