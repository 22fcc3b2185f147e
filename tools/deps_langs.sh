#!/bin/sh
# Installs what the candidate languages beyond CUDA C++ and PTX need, from
# PyPI, into klab's language folder ($KLAB_LANG_DIR, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/klab/lang), keyed by version:
#   triton-VERSION/           a virtual environment with triton (Triton candidates)
#   cutlass_dsl-VERSION/      a virtual environment with nvidia-cutlass-dsl
#                             (CuTe DSL candidates)
#   cutlass-VERSION/include/  CUTLASS's and CuTe's C++ headers, from the
#                             nvidia-cutlass wheel (cutlass_library/source/include)
# The versions are pinned in scripts/klab/lang/versions.lua. A user's own
# CUTLASS is named by KLAB_CUTLASS_INCLUDE instead. Where PyPI cannot be
# reached, it says so and exits 0: those languages are then refused with
# the reason, and their tests skip.
set -eu
here=$(dirname "$0")
pin() { sed -n "s/^ *$1 = \"\\([^\"]*\\)\",*\$/\\1/p" "$here/../scripts/klab/lang/versions.lua"; }
TRITON=$(pin triton)
CUTLASS=$(pin cutlass)
CUTLASS_DSL=$(pin cutlass_dsl)
dir=${KLAB_LANG_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/klab/lang}
say() { echo "deps: $*" >&2; }
command -v python3 >/dev/null 2>&1 || { say "python3 is missing: Triton, CuTe and CuTe DSL candidates will be refused"; exit 0; }
mkdir -p "$dir"

# A virtual environment with one pinned package, made in place (a venv's
# scripts name its folder); importing MODULE is the mark of a finished
# install. Without python3-venv or PyPI it says so, leaves nothing behind
# and goes on: that language's candidates are then refused with the reason.
venv_with() { # FOLDER PACKAGE==VERSION MODULE TITLE
    venv="$dir/$1"
    if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c "import $3" 2>/dev/null; then
        return 0
    fi
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        say "python3 -m venv failed (python3-venv missing?): $4 candidates will be refused"
    elif ! "$venv/bin/python3" -m pip install -q --timeout 30 --retries 2 "$2" >"$dir/$1.install.log" 2>&1; then
        rm -rf "$venv"
        say "PyPI not reachable: pip install $2 failed ($(tail -n 1 "$dir/$1.install.log")): $4 candidates will be refused"
    fi
}

venv_with "triton-$TRITON" "triton==$TRITON" triton Triton
venv_with "cutlass_dsl-$CUTLASS_DSL" "nvidia-cutlass-dsl==$CUTLASS_DSL" nvidia_cutlass_dsl "CuTe DSL"

inc="$dir/cutlass-$CUTLASS/include"
if [ ! -f "$inc/cutlass/version.h" ]; then
    work=$(mktemp -d "$dir/cutlass.XXXXXX")
    if python3 -m pip download -q --timeout 30 --retries 2 --no-deps "nvidia-cutlass==$CUTLASS" -d "$work" >"$work/download.log" 2>&1; then
        # Only the headers: cutlass_library/source/include/{cute,cutlass}.
        python3 - "$work"/nvidia_cutlass-*.whl "$work/include" <<'PY'
import sys, zipfile
prefix = "cutlass_library/source/include/"
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            z.extract(name, sys.argv[2] + ".tmp")
PY
        rm -rf "$dir/cutlass-$CUTLASS"
        mkdir -p "$dir/cutlass-$CUTLASS"
        mv "$work/include.tmp/cutlass_library/source/include" "$inc"
    else
        say "PyPI not reachable: pip download nvidia-cutlass==$CUTLASS failed ($(tail -n 1 "$work/download.log")): CuTe candidates will be refused"
    fi
    rm -rf "$work"
fi
