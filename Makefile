# edgeplane: top-level build.  `make run` and `make test` are the two commands
# the README promises; both start with scripts/setup, which is idempotent.
#
# Component makefiles in mk/*.mk add their own targets to BUILD_TARGETS,
# TEST_TARGETS and document their bench names; this file owns the data plane.

SHELL      := /bin/bash
ROOT       := $(CURDIR)
BUILD      := $(ROOT)/build
DP_BUILD   := $(BUILD)/dp
ASAN_BUILD := $(BUILD)/dp-asan
FUZZ_BUILD := $(BUILD)/dp-fuzz
VENV       := $(ROOT)/.venv
PY         := $(VENV)/bin/python
BENCH      ?= all
FUZZ_SECONDS ?= 60

BUILD_TARGETS :=
TEST_TARGETS  :=

.PHONY: all setup build build-dp test test-unit test-asan test-fuzz \
        test-integration run bench clean peers build-preload-asan

all: build

setup:
	@scripts/setup

include $(wildcard mk/*.mk)

build: setup build-dp $(BUILD_TARGETS)

build-dp:
	@[ -f $(DP_BUILD)/build.ninja ] || meson setup $(DP_BUILD) dataplane --buildtype=release -Db_ndebug=if-release >/dev/null
	@ninja -C $(DP_BUILD)

# C unit tests of every stage, then the same tests under ASAN and UBSAN.
test-unit: build-dp
	@meson test -C $(DP_BUILD) --suite unit --print-errorlogs

test-asan:
	@[ -f $(ASAN_BUILD)/build.ninja ] || CC=clang meson setup $(ASAN_BUILD) dataplane --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Db_lto=false >/dev/null
	@ninja -C $(ASAN_BUILD)
	@UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	  meson test -C $(ASAN_BUILD) --suite unit --print-errorlogs

# libFuzzer on the packet parsers, bounded in time.
test-fuzz:
	@[ -f $(FUZZ_BUILD)/build.ninja ] || CC=clang meson setup $(FUZZ_BUILD) dataplane --buildtype=debug -Dfuzz=true -Db_lundef=false -Db_lto=false >/dev/null
	@ninja -C $(FUZZ_BUILD)
	@scripts/run-fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The preload library under ASAN/UBSAN, loaded by pytest into real programs
# (tests/test_udp_semantics_asan.py, tests/test_preload_early_calls.py): it
# runs only inside other programs, so its sanitizer checks are pytest's.
build-preload-asan:
	@[ -f $(ASAN_BUILD)/build.ninja ] || CC=clang meson setup $(ASAN_BUILD) dataplane --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Db_lto=false >/dev/null
	@ninja -C $(ASAN_BUILD) preload/libedgeplane-preload.so preload/libepl-early-caller.so

# pytest in network namespaces with the real binaries; last, so its summary
# line closes the run.
test-integration: build build-preload-asan
	@$(PY) -m pytest -q tests

test: lint build test-unit test-asan test-fuzz $(TEST_TARGETS) test-integration

run: build
	@$(PY) -m lab.demo

peers: setup
	@scripts/build-peers

bench: build peers
	@$(PY) -m bench $(BENCH)

clean:
	rm -rf $(BUILD)
