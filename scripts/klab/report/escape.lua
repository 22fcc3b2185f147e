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

-- Markdown: the table's bar, the characters that start inline markup, and
-- HTML (a name is text, never markup).
local MD = { ["|"] = "\\|", ["\\"] = "\\\\", ["`"] = "\\`", ["*"] = "\\*",
  ["<"] = "&lt;", [">"] = "&gt;", ["&"] = "&amp;" }
function M.markdown(s)
  return (plain(s):gsub("[|\\`*<>&]", MD))
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

return M
