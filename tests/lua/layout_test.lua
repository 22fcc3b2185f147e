-- layout_test.lua: the source tree keeps its layers apart (docs/conventions.md).
local T = {}

local function lines(cmd)
  local out = {}
  local p = assert(io.popen(cmd))
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

-- host/ is Lua-free by construction: no file there includes a Lua header,
-- and every C file sits in a folder of one concern.
function T.host_is_lua_free(t)
  local files = lines("find host -type f \\( -name '*.c' -o -name '*.h' \\) | sort")
  t.ok(#files > 20, "found the host sources (" .. #files .. ")")
  for _, f in ipairs(files) do
    local fh = assert(io.open(f))
    local src = fh:read("a")
    fh:close()
    local inc
    for h in src:gmatch("#%s*include%s*[<\"]([%w_/%.]+)[>\"]") do
      if h == "lua.h" or h == "lauxlib.h" or h == "lualib.h" or h:find("preload") or h:find("^l[%w]*host") then inc = h end
    end
    t.ok(inc == nil, f .. " includes no Lua header (" .. tostring(inc) .. ")")
    t.ok(f:match("^host/[a-z]+/[^/]+$") ~= nil, f .. " lies in a concern folder host/<concern>/")
  end
end

-- Only bindings/ and app/ include lua.h.
function T.lua_headers_only_in_bindings_and_app(t)
  local hits = lines("grep -rlE '#include <(lua|lauxlib|lualib)\\.h>' host bindings app tests/c")
  t.ok(#hits > 0, "some files include lua.h")
  for _, f in ipairs(hits) do
    t.ok(f:match("^bindings/") or f:match("^app/"), f .. " is a binding or the app")
  end
end

return T
