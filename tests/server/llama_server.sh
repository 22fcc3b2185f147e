#!/bin/sh
# tests/server/llama_server.sh: a real OpenAI- and Anthropic-compatible
# server for the tests, llama.cpp's llama-server, and a tiny model for it.
#
#   llama_server.sh binary      prints the path of a llama-server binary
#   llama_server.sh python      prints the path of a python3 that has the
#                               gguf package (to write the model with)
#
# Nothing of llama.cpp is in the repository: the binary is built from the
# llama-cpp-python source package on PyPI, which carries llama.cpp in
# vendor/llama.cpp, and kept outside the checkout in
# $KLAB_TEST_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/klab-tests),
# keyed by the package's version, so that only the first run pays for the
# build (about 8 minutes on two cores). Exit status 77, with the reason on
# stderr, when the registry cannot be reached or a build tool is missing:
# the test then says why it was skipped.
set -eu
VERSION=0.3.36
GGUF_VERSION=0.19.0
cache=${KLAB_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/klab-tests}
skip() { echo "$*" >&2; exit 77; }

python_with_gguf() {
    venv="$cache/gguf-$GGUF_VERSION"
    if [ ! -x "$venv/bin/python3" ] || ! "$venv/bin/python3" -c 'import gguf' 2>/dev/null; then
        command -v python3 >/dev/null 2>&1 || skip "python3 is not installed"
        rm -rf "$venv"
        mkdir -p "$cache"
        python3 -m venv "$venv" >/dev/null 2>&1 || skip "python3 -m venv failed (python3-venv missing?)"
        "$venv/bin/python3" -m pip install -q --timeout 30 --retries 2 "gguf==$GGUF_VERSION" >"$cache/gguf-install.log" 2>&1 ||
            { rm -rf "$venv"; skip "PyPI not reachable: pip install gguf==$GGUF_VERSION failed ($(tail -n 1 "$cache/gguf-install.log"))"; }
    fi
    echo "$venv/bin/python3"
}

binary() {
    dir="$cache/llama-server-$VERSION"
    if [ -x "$dir/llama-server" ]; then echo "$dir/llama-server"; return; fi
    for tool in cmake c++ python3; do
        command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (needed to build llama-server)"
    done
    mkdir -p "$cache"
    work=$(mktemp -d "$cache/build.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    python3 -m pip download -q --timeout 30 --retries 2 --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$work" \
        >"$work/download.log" 2>&1 ||
        skip "PyPI not reachable: pip download llama-cpp-python==$VERSION failed ($(tail -n 1 "$work/download.log"))"
    tar -xzf "$work/llama_cpp_python-$VERSION.tar.gz" -C "$work"
    src="$work/llama_cpp_python-$VERSION/vendor/llama.cpp"
    [ -f "$src/CMakeLists.txt" ] || { echo "llama_server.sh: no vendor/llama.cpp in the source package" >&2; exit 1; }
    echo "llama_server.sh: building llama-server $VERSION (once; kept in $dir)" >&2
    # No web UI (it would be downloaded), no OpenSSL, no CPU-specific code
    # (the binary may run on another machine), one static binary.
    cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF >"$work/cmake.log" 2>&1 ||
        { tail -n 20 "$work/cmake.log" >&2; exit 1; }
    cmake --build "$work/build" --target llama-server -j "$(nproc 2>/dev/null || echo 2)" >"$work/build.log" 2>&1 ||
        { tail -n 20 "$work/build.log" >&2; exit 1; }
    mkdir -p "$dir"
    cp "$work/build/bin/llama-server" "$dir/llama-server.tmp"
    mv "$dir/llama-server.tmp" "$dir/llama-server"
    echo "$dir/llama-server"
}

case "${1:-}" in
binary) binary ;;
python) python_with_gguf ;;
*) echo "usage: llama_server.sh binary|python" >&2; exit 2 ;;
esac
