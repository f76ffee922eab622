# The two commands a newcomer needs: `make demo` and `make test`. Everything they need is installed
# here: Debian packages (cmocka) through apt, Python packages into .venv.
PYTHON  ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
XPROF_VENV := .venv-xprof
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
ASAN    := build-asan
SOURCES := $(shell git ls-files 2>/dev/null | grep -E '\.(c|h|py|build|options|toml|js|css|html)$$' || find src include cli python -type f)

.PHONY: demo test test-c test-py install sysdeps builddeps venv clean bench generate

demo: install
	$(VENV)/bin/jaxprof demo

test: test-c test-py

# C library tests under AddressSanitizer + UndefinedBehaviorSanitizer, warnings as errors. Everything
# is built, the CLI too: test-py runs $(ASAN)/jaxprof on realistic captures (test_realistic.py).
ASAN_SETUP = [ -f $(ASAN)/build.ninja ] || $(VENV)/bin/meson setup $(ASAN) --werror -Dbuildtype=debug \
	    -Db_sanitize=address,undefined -Dc_args=-fno-sanitize-recover=all -Dpython=disabled -Dtests=enabled -Dsqlite=enabled

test-c: sysdeps venv
	@$(ASAN_SETUP)
	$(VENV)/bin/meson compile -C $(ASAN)
	$(VENV)/bin/meson test -C $(ASAN) --print-errorlogs

test-py: install $(VENV)/.test-deps
	JAXPROF_REAL_CAPTURES=$${JAXPROF_REAL_CAPTURES:-$(CURDIR)/../shared/captures} JAXPROF_ASAN_BIN=$(CURDIR)/$(ASAN)/jaxprof $(VPY) -m pytest -q tests/python

install: $(VENV)/.installed

# The files generated from the tables' column descriptors (src/render/columns.c): docs/json-schema.md,
# python/jaxprof/results.py, src/serve/assets/columns.js. test-c's `generated` test fails when one is
# stale; this rewrites them.
generate: sysdeps venv
	@$(ASAN_SETUP)
	ninja -C $(ASAN) jaxprof-columns # ninja, not meson compile: it reconfigures first when meson.build changed
	$(VPY) tools/generated.py $(ASAN)/jaxprof-columns . --write

$(VENV)/.installed: $(VENV)/.deps $(SOURCES) | builddeps
	$(VPY) -m pip install -q --no-build-isolation --no-deps -Csetup-args=--werror -Csetup-args=-Dtests=disabled -Csetup-args=-Dsqlite=enabled -Cbuild-dir=build-py .
	touch $@

venv: $(VENV)/.deps

# What the build and the demo need: meson-python to build, JAX (CPU) to run the demo model.
$(VENV)/.deps: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q "meson-python>=0.15" "meson>=1.1" ninja "jax>=0.4.30" numpy
	touch $@

# Test-only: pytest; a real TensorBoard, Perfetto's own trace protos, Selenium for the browser tests;
# xprof for `jaxprof capture`, whose gRPC profiler client it ships (optional for users); Flax and
# Optax for the tests that profile real models (the diff of two Flax MLPs).
$(VENV)/.test-deps: $(VENV)/.deps
	$(VPY) -m pip install -q "pytest>=7" tensorboard perfetto selenium "xprof>=2.24" flax optax pandas
	touch $@

# What the library links, for `make demo` on a fresh machine: zlib and SQLite's headers (Debian).
builddeps:
	@pkg-config --exists zlib sqlite3 || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq zlib1g-dev libsqlite3-dev pkg-config >/dev/null; }

# cmocka (C unit tests), zlib (gzip input), SQLite (jaxprof sql), and Chromium + chromedriver (viewer
# browser tests), from Debian.
sysdeps:
	@{ pkg-config --exists cmocka zlib sqlite3 && command -v chromium >/dev/null && command -v chromedriver >/dev/null; } || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	    libcmocka-dev zlib1g-dev libsqlite3-dev pkg-config chromium chromium-driver >/dev/null; }

# XProf, the peer of benchmarks/report_speed.py, in a venv of its own: its protobuf and TensorFlow
# pins would fight JAX's and TensorBoard's in .venv.
$(XPROF_VENV)/.installed:
	$(PYTHON) -m venv $(XPROF_VENV)
	$(XPROF_VENV)/bin/pip install -q xprof
	touch $@

clean:
	rm -rf build build-asan build-py $(VENV) $(XPROF_VENV) jaxprof-demo

# Benchmarks: rewrites docs/benchmarks.md (see benchmarks/header.md).
bench: install $(VENV)/.test-deps $(XPROF_VENV)/.installed
	$(VPY) benchmarks/real_capture.py >/dev/null
	{ cat benchmarks/header.md; $(VPY) benchmarks/capture_overhead.py; $(VPY) benchmarks/run_overhead.py; $(VPY) benchmarks/analysis_speed.py; $(VPY) benchmarks/export_speed.py; $(VPY) benchmarks/sql_speed.py; $(VPY) benchmarks/viewer_speed.py; $(VPY) benchmarks/multihost_report.py; $(VPY) benchmarks/multihost_scaling.py; $(VPY) benchmarks/pod_scale.py; $(VPY) benchmarks/real_captures.py --xprof-python $(XPROF_VENV)/bin/python; $(VPY) benchmarks/floor_speed.py; $(VPY) benchmarks/report_speed.py --xprof-python $(XPROF_VENV)/bin/python; cat benchmarks/analysis_cost.md benchmarks/sql_export_cost.md benchmarks/buffers_cost.md benchmarks/read_cost.md benchmarks/fuzzing.md benchmarks/issue33_cost.md benchmarks/issue34.md; } > docs/benchmarks.md.tmp
	mv docs/benchmarks.md.tmp docs/benchmarks.md

# Fuzzing (tests/fuzz, issue 7): every target built for libFuzzer with clang (ASan+UBSan) in
# FUZZ_BUILD, then run FUZZ_SECONDS each on its committed corpus; new inputs go to FUZZ_WORK/<t>,
# never into tests/fuzz/corpus, and a crash leaves FUZZ_WORK/<t>-crash-<sha1> (replay it with
# FUZZ_BUILD/tests/fuzz/fuzz_<t> <file>). `make test` replays the committed corpora with gcc.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= xspace gzip hlo hlotext profile http viewer writers summary
FUZZ_BUILD   ?= build/fuzz
FUZZ_WORK    ?= build/fuzz-work
FUZZ_MAXLEN_gzip := 16384
FUZZ_MAXLEN_http := 20000
FUZZ_MAXLEN_viewer := 20000

.PHONY: fuzz
fuzz: venv
	@{ command -v clang >/dev/null && pkg-config --exists cmocka zlib sqlite3; } || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq clang libcmocka-dev zlib1g-dev libsqlite3-dev pkg-config >/dev/null; }
	@[ -f $(FUZZ_BUILD)/build.ninja ] || CC=clang $(VENV)/bin/meson setup $(FUZZ_BUILD) -Dbuildtype=debug -Doptimization=1 \
	    -Db_sanitize=address,undefined -Db_lundef=false -Dc_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=all' \
	    -Dpython=disabled -Dtests=enabled
	$(VENV)/bin/meson compile -C $(FUZZ_BUILD) $(addprefix tests/fuzz/fuzz_,$(FUZZ_TARGETS))
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_WORK)/$$t; echo "== fuzz_$$t: $(FUZZ_SECONDS) s"; \
	  case $$t in gzip) len=-max_len=$(FUZZ_MAXLEN_gzip);; http) len=-max_len=$(FUZZ_MAXLEN_http);; viewer) len=-max_len=$(FUZZ_MAXLEN_viewer);; *) len=;; esac; \
	  $(FUZZ_BUILD)/tests/fuzz/fuzz_$$t $$len -max_total_time=$(FUZZ_SECONDS) -timeout=30 -print_final_stats=1 \
	    -artifact_prefix=$(CURDIR)/$(FUZZ_WORK)/$$t- $(FUZZ_WORK)/$$t tests/fuzz/corpus/$$t; \
	done
