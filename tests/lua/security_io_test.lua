-- security_io_test.lua: what klab writes, where it connects and what it
-- sends, tried as an attacker would (no GPU needed). A marker file must stay
-- as it was whatever link is planted where a command writes; a marker secret
-- must never appear in what a server receives, the store or the log.
local fs = require "klab.fs"

local T = {}

local MARKER = "klab-marker: this file must stay as it was\n"

local function q(s) return require("klab.command").shell_quote(s) end

local function here()
  return debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."
end
local fixture = getmetatable(dofile(here() .. "/metrics_test.lua")).__index.fixture
local with_and_without_landlock = getmetatable(dofile(here() .. "/security_test.lua")).__index.with_and_without_landlock

-- A marker file in a folder of its own, and plant(path): a symbolic link at
-- path to it, made again before each run (a run replaces the link).
local function marker(t)
  local d = t.tmpdir()
  local m = d .. "/marker"
  assert(fs.write(m, MARKER))
  local function plant(path)
    os.remove(path)
    assert(os.execute("ln -s " .. q(m) .. " " .. q(path)))
  end
  local function intact(label)
    t.eq(t.read(m), MARKER, label .. ": the link's target is unchanged")
  end
  return m, plant, intact
end

-- Each command's output, planted as a link to the marker beforehand: the
-- command writes its own file in the link's place (or refuses, naming the
-- file) and the marker does not change. With Landlock and without.

function T.export_sft_replaces_a_planted_link(t)
  local dir = t.tmpdir()
  fixture(dir .. "/s.db"):close()
  local _, plant, intact = marker(t)
  local out = dir .. "/s_sft.jsonl"
  plant(out)
  with_and_without_landlock(t, "", "export sft " .. q(dir .. "/s.db"), function(code, _, err, label)
    t.eq(code, 0, label .. ": " .. err)
    intact(label)
    t.eq(fs.type(out), "file", label .. ": the link was replaced by the export")
    t.match(t.read(out) or "", '^{"', label)
    plant(out)
  end)
  with_and_without_landlock(t, "", "export sft " .. q(dir .. "/s.db") .. " --out " .. q(dir .. "/o.jsonl"),
    function(code, _, err, label)
      t.eq(code, 0, label .. ": " .. err)
      t.eq(fs.type(dir .. "/o.jsonl"), "file", label)
    end)
end

function T.compile_output_replaces_a_planted_link(t)
  local v = require("klab.jit").versions()
  if not v.ptxas.ok then t.skip("ptxas not found: " .. tostring(v.ptxas.error)) end
  local ptx = t.root .. "/tasks/samples/vector_add.ptx"
  local dir = t.tmpdir()
  local _, plant, intact = marker(t)
  local out = dir .. "/k.cubin"
  plant(out)
  with_and_without_landlock(t, "", "compile " .. q(ptx) .. " --arch sm_90a --no-cache --json -o " .. q(out),
    function(code, _, err, label)
      t.eq(code, 0, label .. ": " .. err)
      intact(label)
      t.eq(fs.type(out), "file", label)
      t.eq((t.read(out) or ""):sub(1, 4), "\127ELF", label)
      plant(out)
    end)
end

function T.slurm_script_replaces_a_planted_link(t)
  local dir = t.tmpdir()
  local _, plant, intact = marker(t)
  local results = dir .. "/results"
  assert(require("klab.sys").mkdir(results))
  local script = results .. "/sweep.sbatch"
  plant(script)
  local code, out, err = t.sh("cd " .. q(t.root) .. " && " .. q(t.klab) .. " slurm tests/slurm/sweep.lua --shards 2 "
    .. "--results " .. q(results) .. " --dry-run")
  t.eq(code, 0, err)
  intact("slurm")
  t.eq(fs.type(script), "file")
  t.eq(t.read(script), out, "the script written is the one printed")
end

-- The batch script itself, run as an array task outside Slurm: a link
-- planted at the name its store is copied under goes, unfollowed; a folder
-- someone else made under the node folder's name is refused.
function T.slurm_task_does_not_write_through_a_planted_link(t)
  local dir = t.tmpdir()
  local _, plant, intact = marker(t)
  local results, node = dir .. "/results", dir .. "/node"
  local code, _, err = t.sh("cd " .. q(t.root) .. " && " .. q(t.klab) .. " slurm tests/slurm/sweep.lua --shards 3 "
    .. "--results " .. q(results) .. " --local-dir " .. q(node) .. " --dry-run")
  t.eq(code, 0, err)
  plant(results .. "/shard-1-of-3.db.part")
  local task = "cd " .. q(t.root) .. " && SLURM_ARRAY_JOB_ID=77 SLURM_ARRAY_TASK_ID=1 sh " .. q(results .. "/sweep.sbatch")
  code, _, err = t.sh(task)
  t.eq(code, 0, err)
  intact("the saved store")
  t.eq(fs.type(results .. "/shard-1-of-3.db"), "file")
  t.eq(fs.type(results .. "/shard-1-of-3.db.part"), nil)
  -- the node folder of another task, made in advance as a link to a folder
  local elsewhere = t.tmpdir()
  assert(os.execute("ln -s " .. q(elsewhere) .. " " .. q(node .. "/klab-77-2")))
  code = t.sh("cd " .. q(t.root) .. " && SLURM_ARRAY_JOB_ID=77 SLURM_ARRAY_TASK_ID=2 sh " .. q(results .. "/sweep.sbatch"))
  t.eq(code, 1, "refused")
  t.eq(#assert(fs.list(elsewhere)), 0, "nothing was written into the linked folder")
end

function T.report_does_not_write_through_a_planted_link(t)
  local dir = t.tmpdir()
  fixture(dir .. "/s.db"):close()
  local _, plant, intact = marker(t)
  -- --out a link to a file: refused, the file unchanged
  plant(dir .. "/r")
  local code, _, err = t.sh(q(t.klab) .. " report " .. q(dir .. "/s.db") .. " --out " .. q(dir .. "/r"))
  t.eq(code, 2, err)
  intact("report --out a link to a file")
  -- --out a link to a folder that holds an earlier report: the report takes
  -- the link's place; the folder it pointed to keeps its files.
  local victim = t.tmpdir()
  local old = '<html><meta name="generator" content="klab report">' .. MARKER
  assert(fs.write(victim .. "/index.html", old))
  os.remove(dir .. "/r")
  assert(os.execute("ln -s " .. q(victim) .. " " .. q(dir .. "/r")))
  code, _, err = t.sh(q(t.klab) .. " report " .. q(dir .. "/s.db") .. " --out " .. q(dir .. "/r"))
  t.eq(code, 0, err)
  t.eq(fs.type(dir .. "/r"), "dir", "a folder of its own")
  t.eq(t.read(victim .. "/index.html"), old, "the linked folder's files are unchanged")
end

function T.merge_and_store_refuse_a_planted_link(t)
  local dir = t.tmpdir()
  fixture(dir .. "/a.db"):close()
  local m, plant, intact = marker(t)
  plant(dir .. "/out.db")
  local code, _, err = t.sh(q(t.klab) .. " merge " .. q(dir .. "/out.db") .. " " .. q(dir .. "/a.db"))
  t.ok(code ~= 0, "refused")
  t.match(err, "out%.db is a symbolic link")
  intact("merge")
  -- A dangling link: the file it names is not made.
  os.remove(dir .. "/out.db")
  assert(os.execute("ln -s " .. q(dir .. "/made-through-a-link.db") .. " " .. q(dir .. "/out.db")))
  code = t.sh(q(t.klab) .. " merge " .. q(dir .. "/out.db") .. " " .. q(dir .. "/a.db"))
  t.ok(code ~= 0)
  t.eq(fs.type(dir .. "/made-through-a-link.db"), nil, "nothing made through the link")
  local db, msg = require("klab.store").open(m)
  t.eq(db, nil)
  t.ok(msg, "the marker is not a store")
  plant(dir .. "/s.db")
  db, msg = require("klab.store").open(dir .. "/s.db")
  t.eq(db, nil)
  t.match(msg or "", "is a symbolic link")
  intact("store.open")
end

-- The library's own writers: a whole file, piece by piece (abort leaves the
-- target), and an append that refuses a link.
function T.library_writes_never_follow_links(t)
  local dir = t.tmpdir()
  local _, plant, intact = marker(t)
  plant(dir .. "/f")
  assert(fs.write(dir .. "/f", "x"))
  intact("fs.write")
  t.eq(fs.type(dir .. "/f"), "file")
  plant(dir .. "/f")
  local w = assert(fs.create(dir .. "/f"))
  t.eq(w:write("a", 1, "b"), w)
  w:abort()
  t.eq(fs.type(dir .. "/f"), "link", "aborted: the link is as it was")
  w = assert(fs.create(dir .. "/f"))
  w:write("ab")
  t.eq(w:close(), true)
  t.eq(t.read(dir .. "/f"), "ab")
  intact("fs.create")
  plant(dir .. "/log")
  local ok, err = fs.append(dir .. "/log", "line\n")
  t.eq(ok, nil)
  t.match(err, "log: is a symbolic link")
  intact("fs.append")
  local gnuplot = require "klab.report.gnuplot"
  plant(dir .. "/fig.svg")
  gnuplot.write_file(dir .. "/fig.svg", "<svg/>")
  intact("gnuplot.write_file")
end

-- scripts/klab opens no file for writing by itself: every write goes
-- through klab.fs (write, create, append), which never follows a link.
function T.the_library_writes_only_through_klab_fs(t)
  local found = {}
  local p = assert(io.popen("find " .. q(t.root .. "/scripts/klab") .. " -name '*.lua'"))
  for path in p:lines() do
    local src = t.read(path)
    for call in src:gmatch("io%.open(%b())") do
      local mode = call:match(",%s*[\"']([^\"']*)[\"']%s*%)$")
      if mode and mode:find("[wa+]") then found[#found + 1] = path:sub(#t.root + 2) .. ": io.open" .. call end
    end
    if src:find("io%.output%s*%(") then found[#found + 1] = path:sub(#t.root + 2) .. ": io.output" end
  end
  p:close()
  t.eq(#found, 0, table.concat(found, "; "))
end

-- ---- where a key may go ----------------------------------------------------

-- "Loopback" is where libcurl connects: 0127.0.0.1 is 87.0.0.1 to libcurl
-- (octal), so a key may not go there over plain http, while the hex and
-- short spellings of 127.0.0.1 and an IPv4-mapped one may.
function T.loopback_is_where_libcurl_connects(t)
  local http = require "klab.http"
  if not http.client() then return t.skip("libcurl is not installed") end
  local model = require "klab.experiment.model"
  t.raises(function()
    model.new { provider = "openai", model = "m", base_url = "http://0127.0.0.1:8000/v1", api_key_env = "SOME_API_KEY" }
  end, "plain http:// to another machine")
  for _, url in ipairs { "http://0x7f.1:8000/v1", "http://2130706433:8000/v1", "http://127.1:8000/v1",
    "http://[::ffff:127.0.0.1]:8000/v1", "http://localhost.:8000/v1" } do
    t.ok(model.new { provider = "openai", model = "m", base_url = url, api_key_env = "SOME_API_KEY" }, url)
  end
  t.eq(http.is_loopback("http://0127.0.0.1:8000/v1"), false)
  t.eq(http.is_loopback("http://0x7f.1/"), true)
end

-- ---- secrets in what is sent and stored ---------------------------------------

-- Values of secrets whose names or shapes the redaction must know: a model
-- that quotes them all gets none of them back in its next request (where
-- the reply travels JSON-escaped), and none lands in the store, the log or
-- the output.
local SECRETS = {
  QUOTE_TOKEN = 'ab"cd\\ef"gh',
  DATABASE_URL = "postgres://klab:db-marker-pw-5150@db.example:5432/runs",
  SENTRY_DSN = "https://dsn-marker-7a7a@o1.ingest.sentry.io/42",
  SLACK_WEBHOOK_URL = "https://hooks.slack.com/services/T0/B0/webhook-marker-3c3c",
  AUTH = "auth-marker-value-1d1d",
  NPM_AUTH = "npm-auth-marker-2e2e",
  COOKIE = "session=cookie-marker-4f4f",
  SSH_PRIVATE = "ssh-private-marker-5a5a",
  GH_PAT = "ghp_marker_pat_6b6b",
  REDIS_PASS = "redis-pass-marker-7c7c",
  CONTROL_SECRET = "tab\there-marker-8d8d",
}

-- v URL-encoded (every byte but letters and digits, lower-case hex) and
-- base64-encoded.
local function pct(v) return (v:gsub("[^%w]", function(c) return ("%%%02x"):format(c:byte()) end)) end
local function b64(v)
  local abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  return (v:gsub("..?.?", function(g)
    local b1, b2, b3 = g:byte(1, 3)
    local w = b1 << 16 | (b2 or 0) << 8 | (b3 or 0)
    local out = ""
    for i = 3, 0, -1 do out = out .. abc:sub((w >> (6 * i) & 63) + 1, (w >> (6 * i) & 63) + 1) end
    return out:sub(1, #g + 1) .. ("="):rep(3 - #g)
  end))
end

function T.secrets_do_not_leak_in_any_spelling(t)
  dofile(t.root .. "/tests/server/model_server.lua").with(t, function(s)
    local dir = t.tmpdir()
    local quoted = {}
    for name, v in pairs(SECRETS) do quoted[#quoted + 1] = name .. " is " .. v end
    -- The password alone, as a model might quote it out of the URL.
    quoted[#quoted + 1] = "the password is db-marker-pw-5150"
    local reply = table.concat(quoted, "\n") .. "\n```cuda\n#error quoted\n" .. 'extern "C" __global__ void k() {}\n```\n'
    s:script { { reply = reply }, { reply = "no code" }, { reply = "ok" } }
    local env = {}
    for name, v in pairs(SECRETS) do env[#env + 1] = name .. "=" .. q(v) end
    local script = dir .. "/child.lua"
    assert(fs.write(script, [[
local experiment = require "klab.experiment"
local exp = experiment.new {
  name = "leak", db = arg[1] .. "/l.db", log = arg[1] .. "/l.log", progress = false,
  models = { { name = "oa", provider = "openai", model = "m", base_url = arg[2] .. "/v1", retry = { attempts = 1 } } },
  tasks = { "gemm_bf16/123x457x789" }, replicas = 1, turns = 2,
}
exp:run()
local f = assert(io.open(arg[3], "rb"))
assert(require("klab.http").post(arg[2] .. "/v1/chat/completions", nil, f:read("a")))
]]))
    -- A body that carries them as JSON escapes them, a form as URL-encoding
    -- does, a header as base64 does: the body sent is redacted whatever the
    -- spelling.
    local values = {}
    for name, v in pairs(SECRETS) do
      values[#values + 1] = { name = name, raw = v, url = pct(v), basic = "Basic " .. b64("user:" .. v) }
    end
    assert(fs.write(dir .. "/body.json", require("klab.json").encode { values = values }))
    local env_line = "cd " .. q(t.root) .. " && " .. table.concat(env, " ")
    local args = q(script) .. " " .. q(dir) .. " " .. q(s.base) .. " " .. q(dir .. "/body.json")
    local seen = 0
    with_and_without_landlock(t, env_line, args, function(code, out, err, label)
      t.eq(code, 0, label .. ": " .. err)
      local log = s:log()
      t.eq(#log, seen + 3, label .. ": the reply was fed back in a second request, and a body was posted")
      local second, third = log[seen + 2] and log[seen + 2].body or "", log[seen + 3] and log[seen + 3].body or ""
      seen = #log
      t.match(second, "QUOTE_TOKEN is %[redacted QUOTE_TOKEN%]", label .. ": the quoted reply went back, redacted")
      t.match(third, '"raw":"%[redacted QUOTE_TOKEN%]"', label .. ": the body carried the values, redacted")
      t.match(third, '"basic":"Basic %w*%[redacted GH_PAT%]"', label .. ": only what encodes 'user:' is left")
      t.match(third, '"url":"%[redacted SENTRY_DSN%]"', label)
      local blobs = { second, third, out, err, t.read(dir .. "/l.log") or "" }
      for _, suffix in ipairs { "", "-wal" } do blobs[#blobs + 1] = t.read(dir .. "/l.db" .. suffix) or "" end
      local json = require "klab.json"
      for name, v in pairs(SECRETS) do
        local escaped = json.encode(v):sub(2, -2)
        for i, b in ipairs(blobs) do
          t.ok(not b:find(v, 1, true) and not b:find(escaped, 1, true), label .. ": " .. name .. " is absent from output " .. i)
        end
        t.ok(not third:find(pct(v), 1, true) and not third:find(b64("user:" .. v), 1, true),
          label .. ": " .. name .. ": no encoded form")
      end
      for i, b in ipairs(blobs) do
        t.ok(not b:find("db-marker-pw-5150", 1, true), label .. ": the URL's password, output " .. i)
      end
      -- the next run starts a new study
      for _, f in ipairs { "/l.db", "/l.db-wal", "/l.db-shm", "/l.log" } do os.remove(dir .. f) end
      s:script { { reply = reply }, { reply = "no code" }, { reply = "ok" } }
    end)
  end)
end

return T
