-- browser_test.lua: the quickstart's report as a browser shows it. Headless
-- Chromium (Debian's chromium, which `make test` installs through
-- tools/deps.sh --test) opens index.html at 1280x800: the page renders, every
-- image decodes and every figure and table it links is there, and the
-- provenance and the "GPU stages skipped" notice are on the first screen.

local sq = require("klab.command").shell_quote

local T = {}

local WIDTH, HEIGHT = 1280, 800

local function browser(t)
  local env = os.getenv("KLAB_CHROMIUM")
  if env and env ~= "" then return env end
  for _, name in ipairs { "chromium", "chromium-browser", "google-chrome" } do
    local code, out = t.sh("command -v " .. name)
    if code == 0 then return (out:gsub("%s+$", "")) end
  end
  return nil
end

-- Width and height from a PNG's IHDR chunk, or nil.
local function png_size(s)
  if not s or s:sub(1, 8) ~= "\137PNG\r\n\26\n" or s:sub(13, 16) ~= "IHDR" then return nil end
  return string.unpack(">I4I4", s, 17)
end

-- The browser, or a skip saying how to get one.
local function need_chromium(t)
  if t.klab:find("/asan/", 1, true) then t.skip("the browser check runs once, with the plain build") end
  local chromium = browser(t)
  if not chromium then
    t.skip("no headless browser (chromium): `sh tools/deps.sh --test` installs it, or set KLAB_CHROMIUM")
  end
  return chromium
end

-- Opens a copy of the report's index.html with probe (a script that writes
-- its findings as JSON into <pre id="klab-probe">) in a w x h window; returns
-- the findings, or nil when the page did not load.
local function run_probe(t, chromium, rdir, index, probe, w, h, profile)
  local page = rdir .. "/index-probe.html"
  local f = assert(io.open(page, "wb"))
  f:write((index:gsub("</body>", probe .. "</body>", 1)))
  f:close()
  local flags = ("--headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars --user-data-dir=%s "
    .. "--window-size=%d,%d --virtual-time-budget=5000"):format(sq(profile), w, h)
  local code, dom, err = t.sh("timeout 120 " .. sq(chromium) .. " " .. flags .. " --dump-dom " .. sq("file://" .. page))
  t.eq(code, 0, "chromium --dump-dom: " .. err)
  local json = dom:match('<pre id="klab%-probe">(.-)</pre>')
  if not t.ok(json, "the page loaded and the probe ran") then return nil end
  return require("cjson").decode((json:gsub("&quot;", '"'):gsub("&lt;", "<"):gsub("&gt;", ">"):gsub("&amp;", "&"))),
    flags
end

-- A probe: a script that, once the page and its images loaded, runs body
-- (JavaScript that fills an object `out`) and writes `out` as JSON into
-- <pre id="klab-probe">, where run_probe reads it.
local function probe_script(body)
  return '<script>\nwindow.addEventListener("load", function () {\n' .. body .. '  var pre = document.createElement("pre");\n'
    .. '  pre.id = "klab-probe";\n  pre.textContent = JSON.stringify(out);\n  document.body.appendChild(pre);\n});\n</script>\n'
end

-- Reports, after the page and its images loaded, what the test checks: the
-- viewport, each image's decoded size, and the boxes of the notice and of
-- the provenance table. The checked page is a copy of index.html beside it
-- (the report itself has no scripts).
local PROBE = probe_script [[
  function box(sel) {
    var e = document.querySelector(sel);
    if (!e) return null;
    var r = e.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, width: r.width, height: r.height, text: e.textContent.slice(0, 200) };
  }
  var out = { vw: window.innerWidth, vh: window.innerHeight, imgs: [], notice: box("#not-measured"),
              glance: box("table.glance"), h1: box("h1") };
  document.querySelectorAll("img").forEach(function (i) {
    out.imgs.push({ src: i.getAttribute("src"), complete: i.complete, w: i.naturalWidth, h: i.naturalHeight });
  });
]]

function T.quickstart_report_in_a_browser(t)
  local chromium = need_chromium(t)
  local d = t.tmpdir()
  -- The quickstart as `make run` runs it, with one kernel to compile.
  local code, out, err = t.sh("cd " .. sq(t.root) .. " && KLAB_CACHE_DIR=" .. sq(d .. "/cache") .. " " .. sq(t.klab)
    .. " experiments/quickstart.lua arch=sm_90a files=tasks/samples/vector_add.ptx out=" .. sq(d .. "/qs"))
  t.eq(code, 0, err)
  local rdir = d .. "/qs/report"
  local index = t.read(rdir .. "/index.html")
  if not t.ok(index, "the quickstart wrote its report: " .. out) then return end
  local gpu = require("klab.gpu").available()

  -- Everything the page links is there; images are PNGs.
  local links = 0
  for attr, rel in index:gmatch('(%a+)="([^"#:]+%.%w+)"') do
    if attr == "src" or attr == "href" then
      links = links + 1
      local body = t.read(rdir .. "/" .. rel)
      t.ok(body and #body > 0, "linked file exists: " .. rel)
      if attr == "src" then t.ok(png_size(body), rel .. " is a PNG") end
    end
  end
  t.ok(links >= 12, "the tables' Markdown and LaTeX at least: " .. links)

  local p, flags = run_probe(t, chromium, rdir, index, PROBE, WIDTH, HEIGHT, d .. "/profile")
  if not p then return end
  -- The first screen is the viewport of a 1280x800 window (its height less the browser's own bars).
  t.eq(p.vw, WIDTH)
  local screen = p.vh
  t.ok(screen >= 600 and screen <= HEIGHT, "a 1280x800 window's viewport: " .. screen)
  t.match(p.h1.text, "^klab report: quickstart")
  -- Every image decoded.
  for _, img in ipairs(p.imgs) do
    t.ok(img.complete and img.w > 0 and img.h > 0, "image decodes: " .. tostring(img.src))
  end
  -- The provenance table is on the first screen.
  t.ok(p.glance and p.glance.top >= 0 and p.glance.bottom <= screen,
    ("the provenance (At a glance) ends within the first %d px: %s"):format(screen, p.glance and p.glance.bottom))
  t.match(p.glance and p.glance.text or "", "Store")
  if gpu then
    t.eq(p.notice, nil, "a machine with a GPU measured everything: no notice")
  elseif t.ok(p.notice, "the awaiting-judgement notice is on the page") then
    -- Without a GPU the quickstart is a generate phase: its turns await klab judge.
    t.ok(p.notice.top >= 0 and p.notice.bottom <= screen, "the notice is on the first screen: " .. p.notice.bottom)
    t.ok(p.notice.top < p.glance.top, "above the provenance")
    t.match(p.notice.text, "^Awaiting judgement: %d+ turns? w[ae][sr]e? built and plan%-checked where no GPU was")
    t.match(p.notice.text, "klab judge")
  end
  -- The screenshot: the page drew at the window's size.
  code, _, err = t.sh("cd " .. sq(d) .. " && timeout 120 " .. sq(chromium) .. " " .. flags .. " --screenshot="
    .. sq(d .. "/shot.png") .. " " .. sq("file://" .. rdir .. "/index.html"))
  t.eq(code, 0, "chromium --screenshot: " .. err)
  local shot = t.read(d .. "/shot.png")
  local w, h = png_size(shot)
  t.eq(w, WIDTH) t.eq(h, HEIGHT)
  t.ok(shot and #shot > 20000, "the first screen is not blank")
end

-- A report of known results grouped by prompt tag, at 1400 px: every
-- figure loads, the by-tag comparison shows both tags, and no text runs out
-- of its box (nor the page out of the window).
local WIDE_PROBE = probe_script [[
  var out = { vw: window.innerWidth, page: document.documentElement.scrollWidth, imgs: [], over: [], compare: "",
              heads: [] };
  document.querySelectorAll("img").forEach(function (i) {
    out.imgs.push({ src: i.getAttribute("src"), complete: i.complete, w: i.naturalWidth, h: i.naturalHeight });
  });
  document.querySelectorAll("td, th, figcaption, summary, h1, h2, h3, p, li").forEach(function (e) {
    if (e.scrollWidth > e.clientWidth + 1) out.over.push(e.tagName + ": " + e.textContent.slice(0, 80));
  });
  // A table wider than the page scrolls in its own box (div.scroll): that box must fit.
  document.querySelectorAll("div.scroll, figure, img").forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.right > window.innerWidth + 1) out.over.push(e.tagName + " ends at " + Math.round(r.right) + " px");
  });
  var widest = null, right = 0;
  document.querySelectorAll("body *").forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.right > right) { right = r.right; widest = e.tagName + (e.id ? "#" + e.id : "") + (e.className ? "." + e.className : ""); }
  });
  out.widest = widest + " ends at " + Math.round(right) + " px";
  var c = document.getElementById("compare");
  if (c) c.querySelectorAll("td").forEach(function (x) { out.compare += "|" + x.textContent; });
]]

function T.report_by_tag_at_1400_px(t)
  local chromium = need_chromium(t)
  local d = t.tmpdir()
  local fixture = getmetatable(dofile(t.root .. "/tests/lua/metrics_test.lua")).__index.fixture
  do
    local db <close> = fixture(d .. "/s.db")
    -- Replica 2 of every task ran with another prompt tag, whose name is
    -- one word of 305 letters: the page still fits the window.
    db:query("UPDATE trajectories SET tag = 'hint-" .. string.rep("h", 300) .. "' WHERE replica = 2")
  end
  local code, out, err = t.sh(("%s report %s --by tag --out %s"):format(sq(t.klab), sq(d .. "/s.db"), sq(d .. "/r")))
  t.eq(code, 0, out .. err)
  local index = t.read(d .. "/r/index.html")
  if not t.ok(index, "the report was written") then return end
  local p = run_probe(t, chromium, d .. "/r", index, WIDE_PROBE, 1400, 900, d .. "/profile")
  if not p then return end
  t.eq(p.vw, 1400)
  t.ok(#p.imgs >= 6, "the figures are on the page: " .. #p.imgs)
  for _, img in ipairs(p.imgs) do
    t.ok(img.complete and img.w > 0 and img.h > 0, "figure loads: " .. tostring(img.src))
  end
  -- The comparison's row: arch, condition A, condition B, ...
  t.match(p.compare, "^|sm_90a|hint%-h+|t|", "both tags side by side")
  t.ok(p.page <= p.vw + 1, "the page fits the window: " .. p.page .. " px; " .. tostring(p.widest))
  t.eq(#p.over, 0, "text that runs out of its box: " .. table.concat(p.over, "; "))
end

-- Tables as a reader wants them at 1280 px: each caption is as wide as the
-- page (not squeezed to its table's width), and no number of the fast_p
-- table wraps (the table scrolls in its own box instead, which fits).
local TABLE_PROBE = probe_script [[
  var body = document.body.getBoundingClientRect().width;
  var out = { body: body, narrow: [], wrapped: [], cells: 0, over: [] };
  document.querySelectorAll("table[id]").forEach(function (t) {
    // The caption: the table's own <caption>, or the paragraph that labels it.
    var cap = t.caption || document.getElementById(t.getAttribute("aria-labelledby"));
    var w = cap ? cap.getBoundingClientRect().width : 0;
    if (w < body - 1) out.narrow.push(t.id + ": " + Math.round(w) + " px");
  });
  document.querySelectorAll("table[id^=fast_p] td.r, table[id^=fast_p] th").forEach(function (c) {
    var r = document.createRange();
    r.selectNodeContents(c);
    out.cells += 1;
    if (r.getClientRects().length > 1) out.wrapped.push(c.textContent);
  });
  document.querySelectorAll("div.scroll").forEach(function (e) {
    if (e.getBoundingClientRect().right > window.innerWidth + 1) out.over.push(e.firstElementChild.id);
  });
]]

function T.captions_span_the_page_and_fast_p_does_not_wrap(t)
  local chromium = need_chromium(t)
  local d = t.tmpdir()
  local fixture = getmetatable(dofile(t.root .. "/tests/lua/metrics_test.lua")).__index.fixture
  fixture(d .. "/s.db"):close()
  local code, out, err = t.sh(("%s report %s --out %s"):format(sq(t.klab), sq(d .. "/s.db"), sq(d .. "/r")))
  t.eq(code, 0, out .. err)
  local index = t.read(d .. "/r/index.html")
  if not t.ok(index, "the report was written") then return end
  local p = run_probe(t, chromium, d .. "/r", index, TABLE_PROBE, WIDTH, HEIGHT, d .. "/profile")
  if not p then return end
  t.eq(#p.narrow, 0, "captions narrower than the page (" .. p.body .. " px): " .. table.concat(p.narrow, "; "))
  t.ok(p.cells >= 40, "the fast_p tables' numbers and heads were looked at: " .. p.cells)
  t.eq(#p.wrapped, 0, "fast_p cells on more than one line: " .. table.concat(p.wrapped, "; "))
  t.eq(#p.over, 0, "table boxes past the window: " .. table.concat(p.over, "; "))
end

return T
