-- klab.mutate.tokens: the tokens of a CUDA C++ source, for the mutation
-- operators (klab.mutate.cuda), which must never touch a comment, a string
-- or a preprocessor line.
--
--   tokens.cuda(text) -> list of {k=, t=, s=, e=, line=}
--     k: "id", "num", "op", "str" (a string or character literal), "pp" (a
--     whole preprocessor line, continuations included); t: the text;
--     s, e: its first and last byte in text; line: the line it starts on.
--     Comments and white space are not tokens.
--   tokens.pairs(list) -> match: for each index of an opening ( [ { the
--     index of its closing one and back (an unbalanced one maps to nothing)
local M = {}

-- Operators, longest first within each length.
local OPS3 = { [">>="] = true, ["<<="] = true, ["->*"] = true, ["..."] = true }
local OPS2 = {}
for op in (":: -> ++ -- << >> <= >= == != && || += -= *= /= %= &= |= ^= .*"):gmatch("%S+") do OPS2[op] = true end

function M.cuda(text)
  local out = {}
  local i, n, line = 1, #text, 1
  local at_line_start = true
  local function add(k, s, e, l)
    out[#out + 1] = { k = k, t = text:sub(s, e), s = s, e = e, line = l }
  end
  while i <= n do
    local c = text:sub(i, i)
    if c == "\n" then
      line, i, at_line_start = line + 1, i + 1, true
    elseif c:match("%s") then
      i = i + 1
    elseif text:sub(i, i + 1) == "//" then
      local j = text:find("\n", i, true) or n + 1
      i = j
    elseif text:sub(i, i + 1) == "/*" then
      local _, j = text:find("*/", i + 2, true)
      j = j or n
      local _, nl = text:sub(i, j):gsub("\n", "")
      line, i = line + nl, j + 1
    elseif c == "#" and at_line_start then
      -- A preprocessor line runs to a newline that no backslash escapes.
      local j, l0 = i, line
      while j <= n do
        local ch = text:sub(j, j)
        if ch == "\n" then
          if text:sub(j - 1, j - 1) ~= "\\" then break end
          line = line + 1
        end
        j = j + 1
      end
      add("pp", i, j - 1, l0)
      i = j
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n do
        local ch = text:sub(j, j)
        if ch == "\\" then
          j = j + 2
        elseif ch == c or ch == "\n" then
          break
        else
          j = j + 1
        end
      end
      add("str", i, math.min(j, n), line)
      at_line_start = false
      i = j + 1
    elseif c:match("[%a_]") then
      local j = text:find("[^%w_]", i) or n + 1
      add("id", i, j - 1, line)
      at_line_start, i = false, j
    elseif c:match("%d") or (c == "." and text:sub(i + 1, i + 1):match("%d")) then
      local hex = text:sub(i, i + 1):lower() == "0x"
      local j = i + 1
      while j <= n do
        local ch = text:sub(j, j)
        local prev = text:sub(j - 1, j - 1):lower()
        if ch:match("[%w%.]") or ch == "_" then
          j = j + 1
        elseif (ch == "+" or ch == "-") and (prev == "p" or (prev == "e" and not hex)) then
          j = j + 1
        else
          break
        end
      end
      add("num", i, j - 1, line)
      at_line_start, i = false, j
    else
      local w = 1
      if OPS3[text:sub(i, i + 2)] then w = 3 elseif OPS2[text:sub(i, i + 1)] then w = 2 end
      add("op", i, i + w - 1, line)
      at_line_start, i = false, i + w
    end
  end
  return out
end

local OPEN = { ["("] = ")", ["["] = "]", ["{"] = "}" }

function M.pairs(list)
  local match, stack = {}, {}
  for i, tk in ipairs(list) do
    if tk.k == "op" then
      if OPEN[tk.t] then
        stack[#stack + 1] = i
      elseif tk.t == ")" or tk.t == "]" or tk.t == "}" then
        local j = stack[#stack]
        if j and OPEN[list[j].t] == tk.t then
          stack[#stack] = nil
          match[i], match[j] = j, i
        end
      end
    end
  end
  return match
end

return M
