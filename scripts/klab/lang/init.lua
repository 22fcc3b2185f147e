-- klab.lang: the candidate languages' front ends (docs/languages.md).
--
--   lang.compile(run)   -> a klab.jit result for run.cand on run.arch (with
--                          .triton, .cute_dsl or .cutlass when those made it) | nil,
--                          message, code [, partial]; code "EPLAN" for a
--                          Triton plan that cannot be used, "EUNSUPPORTED"
--                          when this machine lacks the language
--
-- PTX and CUDA C++ go to klab.jit as they are; a CUDA C++ source that
-- names CuTe's or CUTLASS's headers gets their folder (klab.lang.cutlass);
-- a Triton kernel.py goes through klab.lang.triton, a CuTe DSL one through
-- klab.lang.cute_dsl.
--
--   lang.refine(lang, code) -> the candidate's language once its code is
--                              known: a kernel.py is Triton's unless it
--                              imports cutlass, then it is CuTe DSL's

local M = {}

function M.refine(lang, code)
  if lang == "triton" and require("klab.lang.cute_dsl").claims(code) then return "cute_dsl" end
  return lang
end

function M.compile(run)
  local c = run.cand
  local name = c.file or c.name
  if c.lang == "triton" then return require("klab.lang.triton").build(run) end
  if c.lang == "cute_dsl" then return require("klab.lang.cute_dsl").build(run) end
  local include
  local cutlass = require "klab.lang.cutlass"
  if c.lang == "cuda" and cutlass.wanted(c.code) then
    local why
    include, why = cutlass.include_dir()
    if not include then return nil, name .. ": " .. why, "EUNSUPPORTED" end
  end
  local res, err, code, partial = require("klab.jit").compile { source = c.code, lang = c.lang, arch = run.arch,
    name = name, cache = run.opts.cache, include = include }
  if res and include then res.cutlass = cutlass.version(include) or "unknown" end
  return res, err, code, partial
end

return M
