-- Jobs for tests/lua/worker_test.lua that finish or raise.
local sys = require "klab.sys"

local M = {}

function M.add(args) return args.a + args.b end

function M.echo(args) return args end

-- A result that JSON holds only with its explicit literals.
function M.nonfinite() return { nan = 0 / 0, inf = math.huge } end

function M.pid() return sys.getpid() end

function M.chatty(args)
  print("hello from the job")
  io.stderr:write("a warning on stderr\n")
  return args and args.n or 0
end

-- A job must not be able to read the protocol stream.
function M.read_stdin() return io.read("a") end

function M.fail(args) error(args and args.msg or "job failed") end

function M.fail_object()
  error(setmetatable({}, { __tostring = function() return "custom error object" end }))
end

function M.nested(args)
  local function inner() error("deep failure") end
  inner()
end

function M.unencodable() return { f = function() end } end

function M.big(args) return string.rep("x", args.n) end

-- Passes through two stages and finishes; serve.stage answers true in a
-- worker.
function M.staged()
  local serve = require "klab.proc.serve"
  local a = serve.stage("load")
  local b = serve.stage("correctness", 30)
  return { a = a, b = b }
end

-- Sleeps args.s seconds; says when it ran, where, and which device it was
-- given (for the pool's tests).
function M.span(args)
  local t0 = sys.now()
  sys.sleep(args and args.s or 0)
  return { pid = sys.getpid(), t0 = t0, t1 = sys.now(), device = os.getenv("CUDA_VISIBLE_DEVICES") or "",
    lock = os.getenv("KLAB_GPU_LOCK") or "", tag = args and args.tag }
end

return M
