-- klab.build_text: a klab build as the text stores record and reports show,
-- "0.1.0 (82e7fe1cd662)" (the version, then the commit when it is known).
--
--   build_text.text(version, gitrev) -> text
--   build_text.this()                -> this klab's build as text
--   build_text.with_this(config)     -> the builds a stored experiment config names, then this one

local M = {}

function M.text(version, gitrev)
  return tostring(version or "?") .. ((gitrev and gitrev ~= "") and (" (" .. gitrev .. ")") or "")
end

function M.this()
  local build = require "klab.build"
  return M.text(build.version, build.gitrev)
end

-- The klab builds that have made an experiment's turns: those its stored
-- config (JSON text, or nil for a new experiment) names, then this one when
-- it is not among them. A turn awaiting judgement has no evaluation and no
-- environment yet, so the config is where the build that asked the model is
-- kept. A config that is not JSON names none (the experiment rewrites it).
function M.with_this(config)
  local ok, c = pcall(require("klab.json").decode, config)
  local out, seen = {}, {}
  for _, b in ipairs(ok and type(c) == "table" and type(c.klab) == "table" and c.klab or {}) do
    if type(b) == "string" and not seen[b] then seen[b] = true out[#out + 1] = b end
  end
  local this = M.this()
  if not seen[this] then out[#out + 1] = this end
  return out
end

return M
