# xlat — make targets mirror CI. `make demo` and `make test` work on a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: all setup build wheel package vgtool demo report-docs results-docs test test-rust test-isa test-python rust-tests python-tests test-browser bench lint fmt clean

all: build

# Virtual environment with the build and test tools (re-run only when the requirements change).
$(VENV)/.ready: requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

setup: $(VENV)/.ready

# Build the Rust core and the Python extension into the venv (release build), and the valgrind
# recording tool when valgrind's tool libraries are installed (`xlat trace record` needs it).
# Three builds of the extension (python/xlat/_isa.py loads the best one the CPU runs): `_core`,
# portable x86-64; `_core_v3`, x86-64-v3 (AVX2); `_core_v4`, x86-64-v4 (AVX-512); the last two in
# the target dirs the v3/v4 tests use, with scripts/isa_rustflags.sh's flags (v4: the level's
# instructions scheduled for Zen 5; see the script). Building v4 needs no AVX-512 on the build machine.
# All three are linked against glibc 2.17's symbol versions by zig (ZIG_ENV, scripts/zigcc), so
# that `make wheel` packages these very builds (manylinux2014) without compiling anything again.
# The v3/v4 libraries are copied under another name and renamed into place: a `cp` over a
# library a running process has loaded (a test run) crashes that process with SIGBUS.
# XLAT_NATIVE=1 builds `_core` for this host's CPU instead (linked for this host's glibc), and
# neither `_core_v3` nor `_core_v4`.
ISA_LEVELS := v3 v4
# The host's target triple, given to cargo as `--target` for the ISA builds: with an explicit
# target, RUSTFLAGS apply to the core only and not to build scripts and proc-macros, which run on
# this machine (a v4 build script faults with SIGILL on a CPU without AVX-512, e.g. Zen 3).
HOST_TRIPLE := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
# zig (PyPI's ziglang, in the venv) as the C compiler and linker of the host triple; every cargo
# command on the extension's target dirs gets the same variables, or cargo would rebuild the
# crates each time the variables change (the C parts of zstd and liblzma, and all above them).
TRIPLE_VAR := $(subst -,_,$(HOST_TRIPLE))
ZIG_ENV := CARGO_TARGET_$(shell echo $(TRIPLE_VAR) | tr a-z A-Z)_LINKER=$(abspath scripts/zigcc) \
  CC_$(TRIPLE_VAR)=$(abspath scripts/zigcc)
build: setup
ifeq ($(XLAT_NATIVE),1)
	RUSTFLAGS="-C target-cpu=native" $(VENV)/bin/maturin develop --release --quiet
	rm -f python/xlat/_core_v3*.so python/xlat/_core_v4*.so
else
	$(ZIG_ENV) $(VENV)/bin/maturin develop --release --quiet --target $(HOST_TRIPLE)
	for level in $(ISA_LEVELS); do \
	  flags=$$(scripts/isa_rustflags.sh $$level) || exit 1; \
	  $(ZIG_ENV) RUSTFLAGS="$$flags" CARGO_TARGET_DIR=target/cpu-x86-64-$$level \
	    cargo build --release --quiet --target $(HOST_TRIPLE) -p xlat-py --features isa-$$level,pyo3/extension-module \
	  && cp target/cpu-x86-64-$$level/$(HOST_TRIPLE)/release/lib_core.so python/xlat/_core_$$level.tmp \
	  && mv -f python/xlat/_core_$$level.tmp python/xlat/_core_$$level.abi3.so \
	  || exit 1; \
	done
endif
	@$(MAKE) --no-print-directory vgtool

# A wheel for `pip install` anywhere: abi3 (Python >= 3.9), manylinux2014 (glibc >= 2.17), the
# three builds of the core `make build` made (portable, x86-64-v3 and x86-64-v4;
# python/xlat/_isa.py picks at import), liblzma linked statically, the presets, claims and the
# recorder's source as package data (python/xlat/data). Packaging reuses `make build`'s
# compiled core (same target, same ZIG_ENV); auditwheel then checks every library in the wheel
# against the tag. Sweeps need the `ray` extra: pip install "dist/xlat-<version>-...whl[ray]".
wheel: build
ifeq ($(XLAT_NATIVE),1)
	@echo "a wheel must run on any x86-64 CPU: build it without XLAT_NATIVE=1" >&2; exit 2
endif
	@$(MAKE) --no-print-directory package DIST=dist

# Package what `make build` built into $(DIST) and check it (scripts/check_wheel.py: auditwheel's
# tag from every library in the wheel, and the package data). The cargo invocation is `make
# build`'s, so nothing is compiled when the build is current (tests/test_wheel.py uses this).
DIST ?= dist
WHEEL_FLAGS := --release --target $(HOST_TRIPLE) --compatibility manylinux2014 --auditwheel check
package:
	rm -f $(DIST)/xlat-*.whl
	$(ZIG_ENV) $(VENV)/bin/maturin build $(WHEEL_FLAGS) --quiet -o $(DIST)
	$(PY) scripts/check_wheel.py $(DIST)/xlat-*.whl

# The xlat valgrind tool (GPL-2 helper, python/xlat/data/vgtool): built into the user's cache
# folder by `xlat trace setup` (`xlat trace record` builds it on first use too).
vgtool:
	@$(VENV)/bin/xlat trace setup || echo "warning: xlat valgrind tool not built (see above); 'xlat trace record' will fall back to valgrind's lackey (about 1 M refs/s)"

# The main job: sweep every registered design over four workloads x THP off/on on Ray, store the
# runs in out/demo.duckdb, print the speedup table and write the report from the store.
demo: build
	$(VENV)/bin/xlat sweep configs/sweeps/demo.toml --db out/demo.duckdb --force
	$(VENV)/bin/xlat results --db out/demo.duckdb --speedup-over radix
	$(VENV)/bin/xlat report out/demo.duckdb --out out/
	@echo "report: out/report.html and out/report.md (figures as PNG + PDF in out/)"

# docs/report.md and docs/report/*.png: every figure of the report with how to read it, from a
# small sweep (configs/sweeps/report-docs.toml), so that the page shows what the code draws.
report-docs: build
	$(PY) scripts/report_docs.py configs/sweeps/report-docs.toml out/report-docs.duckdb

# The index of every result-record key with its unit at the end of docs/results.md
# (python/xlat/units.py; tests/test_units.py fails while it is stale).
results-docs: build
	$(PY) scripts/results_docs.py

# The Rust and Python suites run side by side once the build is done (the Python tests leave a
# CPU mostly idle: they wait on subprocesses, Ray and the disk); each suite's output is printed
# whole when it ends.
test: build
	$(MAKE) --no-print-directory -j2 --output-sync=target rust-tests python-tests

# The Rust tests, in profile release-test (Cargo.toml: release without LTO).
test-rust: setup
	$(MAKE) --no-print-directory rust-tests

# The suites alone, without their prerequisites (`make test` builds first, once).
rust-tests:
	cargo test -p xlat --profile release-test

# The whole-set compares (crates/xlat/src/simd.rs) have portable, AVX2 and AVX-512 paths, chosen
# by the build's target CPU: the default build is portable. `make test` checks the optimized
# builds the package carries through their records (tests/test_wheel.py: every registered
# design on two workloads gives the same record under the portable, v3 and, on a host with
# AVX-512, v4 core). This target also runs the unit tests and the golden snapshots compiled
# for x86-64-v3 (and v4 on an AVX-512 host): two more compilations of the crate, about 5
# minutes each on a 2-CPU machine, which is why `make test` leaves them out.
test-isa: setup
	for level in v3 $$(grep -qw avx512f /proc/cpuinfo && echo v4); do \
	  flags=$$(scripts/isa_rustflags.sh $$level) || exit 1; \
	  $(ZIG_ENV) RUSTFLAGS="$$flags" CARGO_TARGET_DIR=target/cpu-x86-64-$$level \
	    cargo test -p xlat --profile release-test --target $(HOST_TRIPLE) --lib --test golden -q || exit 1; \
	done

test-python: build
	$(MAKE) --no-print-directory python-tests

# Two workers (pytest-xdist): with the Rust suite beside them early on and alone later, the two
# CPUs stay busy. Each file's tests stay on one worker (tests/conftest.py). PYTEST_WORKERS=0 runs
# them in this process, one at a time.
PYTEST_WORKERS ?= 2
python-tests:
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -q -rs --durations=15 tests python/xlat docs/sweeps.md docs/notebook.md --doctest-modules --doctest-glob='sweeps.md' --doctest-glob='notebook.md'

# The report's browser test needs Chromium, which `make test` never installs (it is skipped, with
# its reason, when Chromium is missing): this target installs Debian's chromium (apt-get as
# root; about 115 packages, 350 MB) when it is missing, then runs that test. .ci/run installs it
# for CI.
test-browser: build
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  || { echo "test-browser: chromium is missing and cannot be installed here (needs apt-get as root)" >&2; exit 2; }; \
	  echo "installing Debian's chromium (about 350 MB)..."; \
	  apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
	$(PY) -m pytest -q -rs tests/test_report.py -k chromium

# Benchmarks the build the package loads here (python/xlat/_isa.py): x86-64-v4 on a CPU with the
# AVX-512 subsets it uses, else x86-64-v3 on one with AVX2/BMI2/FMA, else portable;
# XLAT_NATIVE=1 benchmarks a host-tuned build.
bench:
ifeq ($(XLAT_NATIVE),1)
	RUSTFLAGS="-C target-cpu=native" CARGO_TARGET_DIR=target/cpu-native cargo bench -p xlat --bench throughput
else
	level=$$(python3 python/xlat/_isa.py); \
	if [ "$$level" = portable ]; then cargo bench -p xlat --bench throughput; \
	else flags=$$(scripts/isa_rustflags.sh $$level) || exit 1; \
	  $(ZIG_ENV) RUSTFLAGS="$$flags" CARGO_TARGET_DIR=target/cpu-x86-64-$$level \
	  cargo bench -p xlat --target $(HOST_TRIPLE) --bench throughput; fi
endif

lint: setup
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests
	$(VENV)/bin/ruff format --check python tests

fmt: setup
	cargo fmt --all
	$(VENV)/bin/ruff format python tests

clean:
	cargo clean
	rm -rf $(VENV) out
