-- klab.lang.ptx: PTX candidates (kernel.ptx), assembled by klab's ptxas as
-- they are (klab.jit). The fields are klab.lang's (scripts/klab/lang/init.lua).
--
--   ptx.as_is(run, jit_lang [, include]) -> klab.jit's result for run.cand's code as it
--       is, in klab.jit's language jit_lang (klab.lang.cuda's build uses it too)

local M = {}

M.title = "PTX"
M.file = "kernel.ptx"
M.suffixes = { ".ptx" }
M.fences = { "ptx" }
M.kernel_hint = "an .entry in PTX"
M.reply_default = true
M.records = {}
M.jit = "ptx"
M.mutants = "klab.mutate.ptx"

-- A module's header (.target) with an entry or a visible function.
function M.untagged(code)
  return code:find("%.target%s") ~= nil and (code:find("%.entry") or code:find("%.visible")) ~= nil
end

function M.kernel(code) return code:find("%.entry") ~= nil end

function M.as_is(run, jit_lang, include)
  local c = run.cand
  return require("klab.jit").compile { source = c.code, lang = jit_lang, arch = run.arch, name = c.file or c.name,
    cache = run.opts.cache, include = include }
end

function M.build(run) return M.as_is(run, M.jit) end

return M
