-- The test runner itself: a test that asserts nothing fails, as a check
-- that cannot fail is no check; a skipped one is counted as skipped.
local T = {}

function T.a_test_without_an_assertion_fails(t)
  local dir = t.tmpdir()
  local f = assert(io.open(dir .. "/fixture_test.lua", "w"))
  f:write([[return {
  silent = function(t) local x = 1 + 1 end,
  asserts = function(t) t.eq(1 + 1, 2) end,
  skips = function(t) t.skip("not here") end,
}
]])
  f:close()
  local code, out, err = t.sh(("'%s' '%s/tests/lua/run.lua' '%s/fixture_test.lua'"):format(t.klab, t.root, dir))
  t.eq(code, 1)
  t.match(out, "lua: 1 passed, 1 failed, 1 skipped")
  t.match(err, "FAIL [^\n]*fixture_test%.lua silent\n    the test made no assertion")
  t.ok(not err:find("asserts\n"), "the asserting test passed")
  os.remove(dir .. "/fixture_test.lua")
  os.remove(dir)
end

return T
