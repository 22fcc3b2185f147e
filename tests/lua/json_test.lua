-- json_test.lua: klab.json, the one canonical JSON encoder.
local json = require "klab.json"
local T = {}

function T.canonical_text(t)
  t.eq(json.encode({ b = 1, a = { 3, 2 }, c = {} }), '{"a":[3,2],"b":1,"c":[]}')
  t.eq(json.encode({}), "[]")
  t.eq(json.encode({ x = 2.0, y = -0.0, z = 0.1, w = 2 ^ 60, v = 1e300 }),
    '{"v":1e+300,"w":1.152921504606847e+18,"x":2,"y":0,"z":0.1}')
  t.eq(json.encode("a\"b\\c\n\t\r\1\127é"), '"a\\"b\\\\c\\n\\t\\r\\u0001\\u007fé"')
  t.eq(json.encode({ json.null, true, false }), "[null,true,false]")
  t.eq(json.encode(12), "12")
  -- Equal tables built in different orders give the same bytes.
  local a, b = {}, {}
  for i = 1, 50 do a["k" .. i] = i end
  for i = 50, 1, -1 do b["k" .. i] = i end
  t.eq(json.encode(a), json.encode(b))
  -- Round trip through the decoder.
  local v = json.decode(json.encode({ n = 1.5, s = "x", l = { 1, 2, 3 } }))
  t.eq(v.n, 1.5); t.eq(v.s, "x"); t.eq(#v.l, 3)
end

function T.refuses_what_json_cannot_hold(t)
  t.raises(function() json.encode({ 0 / 0 }) end, "not a finite number")
  t.raises(function() json.encode({ math.huge }) end, "not a finite number")
  t.raises(function() json.encode({ f = print }) end, "cannot encode a function")
  t.raises(function() json.encode({ [1] = 1, x = 2 }) end, "array")
  t.raises(function() json.encode({ [3] = 1 }) end, "array")
  local c = {}
  c.self = c
  t.raises(function() json.encode(c) end, "nested deeper")
end

-- The store's JSON columns and the model's request hashes use this encoder.
function T.one_encoder_everywhere(t)
  t.eq(require("klab.experiment.model").json, json.encode)
  local db = assert(require("klab.store").open(":memory:"))
  db:insert("experiments", { name = "e", config = { b = {}, a = 1.0 } })
  t.eq(db:first("SELECT config FROM experiments").config, '{"a":1,"b":[]}')
  db:close()
end

-- Text is valid UTF-8 whatever bytes a string held: well-formed sequences
-- pass, any other byte becomes U+FFFD; a compile log that quotes a source
-- full of stray bytes still gives JSON a reader can parse.
function T.text_is_valid_utf8(t)
  local json = require "klab.json"
  t.eq(json.encode { "a\xff\xc3\xa9\xed\xa0\x80\xf0\x9f\x98\x80\xc0\xafz" },
    '["a\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xf0\x9f\x98\x80\xef\xbf\xbd\xef\xbf\xbdz"]')
  local d = t.tmpdir()
  local f = assert(io.open(d .. "/k.cu", "wb"))
  f:write('#error stray \xc0\xaf \xff\xe2\x82 bytes\nextern "C" __global__ void gemm(float *x) { x[0] = 1; }\n')
  f:close()
  local code, out = t.sh(t.klab .. " compile " .. d .. "/k.cu --arch sm_90a --json --no-cache")
  t.eq(code, 1)
  t.ok(utf8.len(out) ~= nil, "the output is valid UTF-8")
  t.ok(out:find("\xef\xbf\xbd", 1, true) ~= nil, "the stray bytes are shown as U+FFFD")
  t.eq(type(json.decode(out)), "table")
end

-- One codec: non-finite numbers only when asked for, as the explicit
-- literals NaN, Infinity and -Infinity, and read back as numbers; integral
-- numbers back as integers when asked for (the worker protocol's sizes).
function T.nonfinite_and_integers(t)
  local json = require "klab.json"
  t.raises(function() json.encode { 0 / 0 } end, "not a finite number")
  t.eq(json.encode({ 1, 0 / 0, math.huge, -math.huge }, { nonfinite = true }), "[1,NaN,Infinity,-Infinity]")
  local v = json.decode("[1,NaN,Infinity,-Infinity,2.5,3.0]")
  t.ok(v[2] ~= v[2], "NaN")
  t.eq(v[3], math.huge)
  t.eq(v[4], -math.huge)
  t.eq(math.type(v[1]), "float", "plain decode keeps JSON's one number type")
  local w = json.decode('{"a":[1,2.0,2.5],"b":{"c":7}}', { integers = true })
  t.eq(math.type(w.a[1]), "integer")
  t.eq(math.type(w.a[2]), "integer")
  t.eq(w.a[3], 2.5)
  t.eq(math.type(w.b.c), "integer")
  t.eq(json.decode("null"), json.null)
  t.raises(function() json.decode("{") end, "^JSON: ")
  -- Through a worker and back: a result's NaN is a number again.
  local sup = require("klab.proc.supervisor").new { env = { LUA_PATH = t.root .. "/tests/lua/jobs/?.lua;;" } }
  local r = sup:run({ module = "basic", fn = "nonfinite" })
  sup:close()
  t.eq(r.status, "finished", tostring(r.error))
  t.ok(r.result.nan ~= r.result.nan and r.result.inf == math.huge, "NaN and Inf come back as numbers")
end

return T
