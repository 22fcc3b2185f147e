#!/bin/sh
# Installs the Debian packages klab's build needs, when missing; with --test
# also what only the tests need (chromium: the report is checked in a
# headless browser); then, from PyPI, the pinned triton and CUTLASS headers
# of the candidate languages (tools/deps_langs.sh; python3-venv for its
# virtual environment). Needs root (or sudo) only when something is missing.
set -eu
pkgs="build-essential pkg-config liblua5.4-dev lua-cjson-dev libsqlite3-dev libcurl4-openssl-dev gnuplot-nox python3 python3-venv"
if [ "${1:-}" = "--test" ]; then
    # chromium: the report checked in a headless browser; slurm-wlm and
    # munge: a sweep run through a local Slurm; cmake and python3-venv:
    # llama.cpp's llama-server, built from PyPI's source package, and the
    # gguf writer for its tiny model (tests/server/llama_server.sh).
    pkgs="$pkgs chromium slurm-wlm munge cmake python3-pip"
fi
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
cuda_check() {
    if [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cuda.h" ]; then
        echo "deps: no CUDA toolkit headers under ${CUDA_HOME:-/usr/local/cuda} (set CUDA_HOME)" >&2
        exit 1
    fi
}
if [ -n "$missing" ]; then
    echo "deps: installing$missing"
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
cuda_check
# Triton and CUTLASS for the candidate languages beyond CUDA C++ and PTX.
sh "$(dirname "$0")/deps_langs.sh"
