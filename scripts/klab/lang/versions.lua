-- klab.lang.versions: the versions of the language front ends' packages that
-- klab is tested with, pinned in one place, and where the deps step installs
-- them. tools/deps.sh reads this file (one `name = "version",` per line) to
-- install them; klab.lang.triton and klab.lang.cutlass find them by these
-- versions in that folder.
local M = {
  triton = "3.6.0",
  cutlass = "4.2.0.0",
  cutlass_dsl = "4.8.1",
}

-- $KLAB_LANG_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/klab/lang (tools/deps_langs.sh).
function M.dir()
  local dir = os.getenv("KLAB_LANG_DIR")
  if dir and dir ~= "" then return dir end
  local xdg = os.getenv("XDG_CACHE_HOME")
  if xdg and xdg ~= "" then return xdg .. "/klab/lang" end
  local home = os.getenv("HOME")
  return home and home ~= "" and (home .. "/.cache/klab/lang") or nil
end

return M
