# klab: plain GNU make.
#
#   make            build build/klab
#   make test       install missing Debian packages (also the tests' own:
#                   chromium, for the report's browser check), build, run
#                   every test (C unit tests, Lua tests, and both again under
#                   ASan+UBSan)
#   make run        install missing Debian packages, build, run the quickstart
#   make gpu-check  run the GPU suite (on a machine with a GPU) and print its table
#   make SAN=1      sanitizer build into build/asan
#   make V=1        show the commands
#
# Lua 5.4, lua-cjson and SQLite are linked statically so that the binary runs
# on a GPU machine that has none of them; libcurl is linked dynamically.
# CUDA libraries are never linked: host/ loads them at run time (libcuda
# through cuGetProcAddress, the others by a stated search order), so the
# binary starts on a machine with no driver. Only CUDA's headers are needed.

CUDA_HOME ?= /usr/local/cuda
PKG_CONFIG ?= pkg-config
LUA_PC ?= lua5.4
CC ?= cc

ifeq ($(SAN),1)
BUILD ?= build/asan
OPT := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
else
BUILD ?= build
OPT := -O2
endif

Q := $(if $(V),,@)
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
GITREV := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter -Werror
# Recursive (=) so that pkg-config runs after `make deps` installed it.
LUA_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(LUA_PC))
CURL_CFLAGS = $(shell $(PKG_CONFIG) --cflags libcurl)
CURL_LIBS = $(shell $(PKG_CONFIG) --libs libcurl)
BASE_CFLAGS = -std=c11 -D_GNU_SOURCE -g $(OPT) $(WARN) -MMD -MP \
	-Ihost -I$(CUDA_HOME)/include -DKLAB_VERSION='"$(VERSION)"' -DKLAB_GITREV='"$(GITREV)"' \
	-DKLAB_CUDA_HOME='"$(CUDA_HOME)"'
STATIC_LIBS = -Wl,-Bstatic -l$(LUA_PC)-cjson -l$(LUA_PC) -lsqlite3 -Wl,-Bdynamic
LDLIBS = $(STATIC_LIBS) $(CURL_LIBS) -ldl -lpthread -lm
LDFLAGS_ALL = $(OPT) -rdynamic

# host/<concern>/*.c is Lua-free C; app/ (main and the Lua runtime) owns the
# lua_State; bindings/ is the only other C that includes lua.h.
HOST_SRC := $(sort $(wildcard host/*/*.c))
APP_SRC := $(sort $(wildcard app/*.c))
BIND_SRC := $(sort $(wildcard bindings/*.c))
BIND_MODS := $(patsubst bindings/l_%.c,%,$(filter bindings/l_%.c,$(BIND_SRC)))
LUA_SRC := $(sort $(shell find scripts -name '*.lua' 2>/dev/null))
CTEST_SRC := $(sort $(wildcard tests/c/test_*.c))

HOST_OBJ := $(HOST_SRC:%.c=$(BUILD)/obj/%.o)
KERNEL_SRC := $(sort $(wildcard host/driver/kernels/*.cu))
KERNEL_OBJ := $(KERNEL_SRC:host/driver/kernels/%.cu=$(BUILD)/obj/gen/kernel_%.o)
# The language front ends' child programs (host/lang/NAME.py), embedded.
PY_SRC := $(sort $(wildcard host/lang/*.py))
PY_OBJ := $(PY_SRC:host/lang/%.py=$(BUILD)/obj/gen/py_%.o)
LUA_OBJ := $(APP_SRC:%.c=$(BUILD)/obj/%.o) $(BIND_SRC:%.c=$(BUILD)/obj/%.o) \
	$(BUILD)/obj/gen/stdlib.o $(BUILD)/obj/gen/modules.o
CTEST_BIN := $(CTEST_SRC:tests/c/%.c=$(BUILD)/tests/%)
CTEST_HELPERS := $(sort $(wildcard tests/c/helper_*.c))
CTEST_HELPER_BIN := $(CTEST_HELPERS:tests/c/%.c=$(BUILD)/tests/%)

.PHONY: all klab deps test-deps test test-only run gpu-check clean check-san tests-bin
all: $(BUILD)/klab tests-bin

klab: $(BUILD)/klab

$(BUILD)/libkhost.a: $(HOST_OBJ) $(KERNEL_OBJ) $(PY_OBJ)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/klab: $(LUA_OBJ) $(BUILD)/libkhost.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(LUA_OBJ) $(BUILD)/libkhost.a $(LDLIBS)

$(BUILD)/obj/host/%.o: host/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(BASE_CFLAGS) -c -o $@ $<

# main.c and runtime.c own the lua_State; they preload the bindings.
$(BUILD)/obj/app/%.o: app/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(BASE_CFLAGS) $(LUA_CFLAGS) -Ibindings -c -o $@ $<

# Every binding sees the prototypes of all luaopen_klab_* (build/gen/modules.h).
$(BUILD)/obj/bindings/%.o: bindings/%.c $(BUILD)/gen/modules.h
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(BASE_CFLAGS) $(LUA_CFLAGS) $(CURL_CFLAGS) -include $(BUILD)/gen/modules.h -c -o $@ $<

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(LUA_CFLAGS) -Wno-missing-prototypes -c -o $@ $<

# The Lua standard library, embedded as source (readable tracebacks).
$(BUILD)/tools/embed: tools/embed.c
	@mkdir -p $(@D)
	$(Q)$(CC) -std=c11 -O1 -Wall -Werror -o $@ $<

$(BUILD)/gen/stdlib.c: $(BUILD)/tools/embed $(LUA_SRC)
	@mkdir -p $(@D)
	@echo "  EMBED   scripts/"
	$(Q)$(BUILD)/tools/embed scripts $(LUA_SRC) > $@.tmp && mv $@.tmp $@

# klab's own device kernels (host/driver/kernels/NAME.cu), embedded as source for
# NVRTC: const char klab_kernel_NAME[] in libkhost.a.
$(BUILD)/gen/kernel_%.c: host/driver/kernels/%.cu $(BUILD)/tools/embed
	@mkdir -p $(@D)
	$(Q)$(BUILD)/tools/embed --blob klab_kernel_$* $< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/kernel_%.o: $(BUILD)/gen/kernel_%.c
	@mkdir -p $(@D)
	$(Q)$(CC) -std=c11 -c -o $@ $<

# host/lang/NAME.py as const char klab_py_NAME[] in libkhost.a.
$(BUILD)/gen/py_%.c: host/lang/%.py $(BUILD)/tools/embed
	@mkdir -p $(@D)
	$(Q)$(BUILD)/tools/embed --blob klab_py_$* $< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/py_%.o: $(BUILD)/gen/py_%.c
	@mkdir -p $(@D)
	$(Q)$(CC) -std=c11 -c -o $@ $<

# One preload entry per bindings/l_<mod>.c: luaopen_klab_<mod> as "klab.<mod>".
$(BUILD)/gen/modules.h: $(BIND_SRC) Makefile
	@mkdir -p $(@D)
	$(Q){ echo '#include <lua.h>'; \
	  for m in $(BIND_MODS); do echo "int luaopen_klab_$$m(lua_State *L);"; done; } > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/modules.c: $(BIND_SRC) Makefile
	@mkdir -p $(@D)
	$(Q){ echo '#include <lua.h>'; \
	  for m in $(BIND_MODS); do echo "int luaopen_klab_$$m(lua_State *L);"; done; \
	  echo 'const struct { const char *name; lua_CFunction open; } klab_c_modules[] = {'; \
	  for m in $(BIND_MODS); do echo "  {\"klab.$$m\", luaopen_klab_$$m},"; done; \
	  echo '  {0, 0}};'; } > $@.tmp && mv $@.tmp $@

# C unit tests: Lua-free, linked against host/ only.
$(BUILD)/tests/%: tests/c/%.c tests/c/check.h $(BUILD)/libkhost.a
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(BASE_CFLAGS) -o $@ $< $(BUILD)/libkhost.a -Wl,-Bstatic -lsqlite3 -Wl,-Bdynamic -ldl -lpthread -lm

tests-bin: $(CTEST_BIN) $(CTEST_HELPER_BIN)

deps:
	$(Q)sh tools/deps.sh

test-deps:
	$(Q)sh tools/deps.sh --test

test: test-deps
	$(Q)$(MAKE) --no-print-directory test-only

# Plain build, then the sanitizer build, each running both suites; one summary line.
test-only:
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory SAN=1 all
	$(Q)sh tests/run.sh --slurm build build/asan

run: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)build/klab experiments/quickstart.lua

# Runs where the GPU is, on what `make` built (the GPU machine needs no
# compiler or Lua): copy the checkout with build/ there and run this.
gpu-check:
	$(Q)test -x build/klab || { echo "gpu-check: build/klab is missing; run make first" >&2; exit 1; }
	$(Q)build/klab tests/gpu/check.lua

clean:
	rm -rf build

.PRECIOUS: $(BUILD)/gen/%.c

-include $(shell find $(BUILD)/obj $(BUILD)/tests -name '*.d' 2>/dev/null)
