-- klab.report.escape: every text that reaches a renderer goes through the
-- one escaper of its format here, since names come from users' stores
-- (models, tasks, tags) and may hold anything.
--
--   escape.gnuplot(s)    a gnuplot string literal ('...'; '' for a quote)
--   escape.gnuplot_tic(s) the same for a tic label, which gnuplot also
--                        reads as a format string (% doubled)
--   escape.markdown(s)   one line of a Markdown table cell or paragraph
--   escape.latex(s)      LaTeX text
--   escape.html(s)       HTML text or attribute value
--   escape.terminal(s [, lines]) a name as a terminal shows it: control
--                        characters (C0, DEL, C1) and bytes that are not
--                        UTF-8 written as \n, \t, \r or \xNN, so that a name
--                        can set no title, clear no screen and start no line;
--                        with lines, line breaks are kept (a whole message)
--
-- Every one drops NUL and the other control characters (a NUL ends a
-- gnuplot script's line, and none means anything in a name) and, but for
-- HTML, makes line breaks spaces, so a name can neither end a command nor a
-- row.

local M = {}

-- Control characters out, line breaks (and tabs) as spaces.
local function plain(s)
  return (tostring(s):gsub("[\r\n\t]+", " "):gsub("[%z\1-\31\127]", ""))
end
M.plain = plain

function M.gnuplot(s)
  return "'" .. plain(s):gsub("'", "''") .. "'"
end

function M.gnuplot_tic(s)
  return M.gnuplot((plain(s):gsub("%%", "%%%%")))
end

-- Markdown: the table's bar, every character that starts or ends inline
-- markup (emphasis, code, strike-through, links and images: a name like
-- [x](javascript:...) or ![](http://...) is text), HTML (a name is text,
-- never markup), and what would start a block at the start of a line (a
-- heading, a list, a quote, a rule).
local MD = { ["<"] = "&lt;", [">"] = "&gt;", ["&"] = "&amp;" }
for c in ("|\\`*_~[]()!"):gmatch(".") do MD[c] = "\\" .. c end
local function block_start(s)
  for _, pat in ipairs { "^(%s*)([#+=-]+)(.*)$", "^(%s*%d+)([.)])(.*)$" } do
    local lead, mark, rest = s:match(pat)
    if mark and (rest == "" or rest:match("^%s")) then return lead .. "\\" .. mark .. rest end
  end
  return s
end
function M.markdown(s)
  return block_start((plain(s):gsub("[|\\`*_~%[%]()!<>&]", MD)))
end

local TEX = { ["\\"] = "\\textbackslash{}", ["&"] = "\\&", ["%"] = "\\%", ["$"] = "\\$", ["#"] = "\\#", ["_"] = "\\_",
  ["{"] = "\\{", ["}"] = "\\}", ["~"] = "\\textasciitilde{}", ["^"] = "\\textasciicircum{}" }
function M.latex(s)
  return (plain(s):gsub("[\\&%%%$#_{}~^]", TEX))
end

-- HTML keeps its line breaks (a prompt shown in <pre> is many lines;
-- elsewhere HTML folds them into spaces itself).
local HTML = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }
function M.html(s)
  return (tostring(s):gsub("[%z\1-\8\11\12\14-\31\127]", ""):gsub("[&<>\"']", HTML))
end

-- Terminal: every byte that a terminal could obey is shown, not sent. A
-- valid UTF-8 character is kept unless it is a C1 control (U+0080 to
-- U+009F: U+009B starts a sequence as ESC [ does).
local SHOWN = { ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r" }
local function shown_byte(b) return SHOWN[string.char(b)] or ("\\x%02x"):format(b) end
function M.terminal(s, lines)
  s = tostring(s)
  if not s:find("[%z\1-\31\127-\255]") then return s end
  local out, i, n = {}, 1, #s
  while i <= n do
    local b = s:byte(i)
    if lines and b == 10 then
      out[#out + 1], i = "\n", i + 1
    elseif b < 32 or b == 127 then
      out[#out + 1], i = shown_byte(b), i + 1
    elseif b < 128 then
      out[#out + 1], i = string.char(b), i + 1
    else
      local ok, cp = pcall(utf8.codepoint, s, i)
      if ok and cp > 0x9f then
        local len = #utf8.char(cp)
        out[#out + 1], i = s:sub(i, i + len - 1), i + len
      elseif ok then
        for k = i, i + 1 do out[#out + 1] = shown_byte(s:byte(k)) end
        i = i + 2
      else
        out[#out + 1], i = shown_byte(b), i + 1
      end
    end
  end
  return table.concat(out)
end

return M
