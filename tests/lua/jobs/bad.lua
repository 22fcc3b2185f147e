-- Jobs for tests/lua/worker_test.lua that hang, crash or exit.
local sys = require "klab.sys"

local M = {}

function M.spin()
  local x = 0
  while true do x = x + 1 end
end

function M.sleep() sys.sleep(1e6) end

function M.segv() sys.kill(sys.getpid(), "SEGV"); sys.sleep(10) end

function M.exit(args) os.exit(args and args.code or 3) end

-- Writes far more than the pipe holds, then hangs: the supervisor must keep
-- draining and still enforce the deadline.
function M.spew_then_hang()
  local line = string.rep("y", 1023) .. "\n"
  for _ = 1, 4096 do io.stderr:write(line) end
  io.stderr:write("LAST-LINE\n")
  sys.sleep(1e6)
end

-- Announces a stage with a limit of its own, then hangs in it.
function M.stage_then_sleep(args)
  require("klab.proc.serve").stage("correctness", args and args.limit or 0.3)
  sys.sleep(1e6)
end

return M
