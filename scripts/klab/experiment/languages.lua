-- klab.experiment.languages: the languages a study may ask its kernels in,
-- a condition of the sweep (an experiment's `languages`, crossed with its
-- models, tasks, tags and replicas).
--
--   languages.DEFAULT          "cuda": a study that names no language
--   languages.names()          -> {"cuda", "cute", "triton"}
--   languages.get(name)        -> the language (below) | nil, why (with did-you-mean)
--   languages.check(list)      -> nil | why: a list of known names, none twice
--   languages.vars()           -> the prompt variables a language's template may use
--   languages.other(name)      -> name, or nil for the default
--   languages.others(list)     -> whether list names more than the default alone
--   languages.candidate(reply, name) -> the reply's candidate in that language
--                                 (klab.experiment.extract's) | nil, why
--
-- A language is {name=, reads= (the candidate languages, klab.eval.
-- candidate's, that a reply is read for: what its code is judged as),
-- requires= (nil, or function(code) -> true | nil, why: what makes the code
-- one of this language's)}. Its prompt variant is prompts/languages/NAME.md
-- (klab.experiment.prompt); klab.experiment.extract takes the code.
--
-- The list of the languages klab knows, their files and fence tags belongs
-- to klab.lang; until that registry lists them this module names the ones a
-- study can ask for.

local errors = require "klab.errors"
local versions = require "klab.lang.versions"

local M = {}

M.DEFAULT = "cuda"

local function uses_cute(code)
  if require("klab.lang.cutlass").wanted(code) then return true end
  return nil, "the kernel includes no CuTe or CUTLASS header (#include <cute/tensor.hpp>); this study asks for a "
    .. "kernel written with CuTe"
end

local LIST = {
  -- What studies asked for before languages were a condition, unchanged:
  -- CUDA C++, or a PTX block.
  { name = "cuda", reads = { "cuda", "ptx" } },
  -- CUDA C++ that includes CuTe's or CUTLASS's headers (kernel.cu).
  { name = "cute", reads = { "cuda" }, requires = uses_cute },
  { name = "triton", reads = { "triton" } },
}
local BY_NAME = {}
for _, l in ipairs(LIST) do BY_NAME[l.name] = l end

function M.names()
  local out = {}
  for i, l in ipairs(LIST) do out[i] = l.name end
  return out
end

function M.get(name)
  local l = BY_NAME[name]
  if l then return l end
  return nil, ("unknown language '%s'%s (known: %s)"):format(tostring(name), errors.did_you_mean(tostring(name),
    M.names()), table.concat(M.names(), ", "))
end

function M.check(list)
  if type(list) ~= "table" or #list == 0 then
    return "languages must be a non-empty list of language names (known: " .. table.concat(M.names(), ", ") .. ")"
  end
  local seen = {}
  for _, name in ipairs(list) do
    local _, why = M.get(name)
    if why then return why end
    if seen[name] then return ("language '%s' is named twice"):format(name) end
    seen[name] = true
  end
  return nil
end

-- A language other than the default is part of a request's key, of its
-- reply's file under responses_dir and of a trajectory's key; the
-- default's are the ones studies had before languages were a condition.
function M.other(name)
  if name ~= M.DEFAULT then return name end
  return nil
end

-- Only a study in more than the default alone lists its languages in its
-- config (so a store written before languages were a condition, and the
-- shards of one made by a klab from before, merge with one made now).
function M.others(list)
  return not (#list == 1 and list[1] == M.DEFAULT)
end

function M.candidate(reply, name)
  local l = assert(M.get(name))
  local c, why = require("klab.experiment.extract").candidate(reply, { languages = l.reads })
  if c and l.requires then
    local ok, not_it = l.requires(c.code)
    if not ok then return nil, not_it end
  end
  return c, why
end

-- The pinned versions, as the prompt names them (the same text on every
-- machine: a prompt is part of a request's key).
function M.vars()
  return { triton_version = versions.triton, cutlass_version = (versions.cutlass:gsub("%.0$", "")) }
end

return M
