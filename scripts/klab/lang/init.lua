-- klab.lang: the candidate languages (docs/languages.md), each one module of
-- this folder, registered once in NAMES below. Whatever else asks about a
-- language (the candidate loader, a model reply's extraction, the build
-- stage, klab mutate, klab compile) asks here, never by the language's name.
--
--   lang.NAMES                  the names, in the order messages list them
--   lang.names()                -> a copy of NAMES
--   lang.get(name)              -> the language's module | nil for a name not registered
--   lang.of_file(filename, code) -> the name of the language whose suffix ends filename; where
--                                  several share the suffix (kernel.py), the one whose `claims`
--                                  knows the code, else the first without `claims` | nil
--   lang.of_fence(tag, code [, among])
--                               -> the language of a reply's fenced block: the one whose tags
--                                  hold tag, or for an untagged block the first whose `untagged`
--                                  knows the text; among (a list of names) limits the answer
--                                  (default: every language) | nil
--   lang.refine(name, code)     -> the language of code named `name` before it was read: where
--                                  name's suffix is shared, the one that claims the code
--   lang.having(field)          -> the names whose module sets field ("jit": those klab.jit
--                                  compiles as they are; "reply_default": those a reply is read
--                                  for when its caller names none)
--   lang.compile(run)           -> a klab.jit result for run.cand on run.arch (with the fields
--                                  its language `records`) | nil, message, code [, partial]; code
--                                  "EPLAN" for a plan the front end cannot use, "EUNSUPPORTED"
--                                  when this machine lacks the language
--
-- A language module has:
--   title           its name for a person ("CUDA C++")
--   file            the code file of a candidate folder ("kernel.cu")
--   suffixes        the endings of its files, the first one the one messages name (".cu")
--   fences          the info tags of a reply's block in it, named in an extraction error
--   more_fences     (optional) tags read as well, not named
--   claims(code)    (optional) whether a file of a suffix it shares is in it (CuTe DSL's
--                   kernel.py imports cutlass; a Triton one does not)
--   untagged(code)  (optional) whether an untagged block's text is in it
--   kernel(code)    whether a block defines a kernel; kernel_hint says how, for a message
--   reply_default   whether a reply is read for it when the caller names no languages
--   build(run)      its front end: lang.compile's returns
--   records         the fields of build's result the build stage keeps ({"cutlass"})
--   jit             (optional) klab.jit's name for it when klab.jit compiles it as it is
--   mutants         (optional) the module of klab mutate's operators for it
--
-- A new language is one module here and its name in NAMES.

local M = {}

M.NAMES = { "cuda", "ptx", "triton", "cute_dsl" }

function M.names() return { table.unpack(M.NAMES) } end

-- Looked up at each call, not cached, so that the registry is NAMES itself.
function M.get(name)
  for _, n in ipairs(M.NAMES) do
    if n == name then return require("klab.lang." .. n) end
  end
  return nil
end

function M.of_file(filename, code)
  local plain
  for _, n in ipairs(M.NAMES) do
    local l = M.get(n)
    for _, suffix in ipairs(l.suffixes) do
      if filename:sub(-#suffix) == suffix then
        if not l.claims then
          plain = plain or n
        elseif code and l.claims(code) then
          return n
        end
      end
    end
  end
  return plain
end

-- A language named before its code was read (a file's suffix, a caller's
-- word): where its suffix is shared, the language that claims the code.
-- A language that claims its files is kept as named.
function M.refine(name, code)
  local l = M.get(name)
  if not l or l.claims or type(code) ~= "string" then return name end
  return M.of_file("kernel" .. l.suffixes[1], code) or name
end

local function holds(list, x)
  for _, v in ipairs(list or {}) do if v == x then return true end end
  return false
end

function M.of_fence(tag, code, among)
  for _, n in ipairs(among or M.NAMES) do
    local l = M.get(n)
    if l then
      if tag == "" then
        if l.untagged and l.untagged(code) then return n end
      elseif holds(l.fences, tag) or holds(l.more_fences, tag) then
        return n
      end
    end
  end
  return nil
end

function M.having(field)
  local out = {}
  for _, n in ipairs(M.NAMES) do
    if M.get(n)[field] then out[#out + 1] = n end
  end
  return out
end

function M.compile(run)
  local l = M.get(run.cand.lang)
  if not l then error("klab.lang: no language " .. tostring(run.cand.lang), 2) end
  return l.build(run)
end

return M
