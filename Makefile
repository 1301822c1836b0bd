# uniap - build, test and benchmark.
#
#   make            build/uniap (and the libraries it is made of)
#   make test       unit + CLI tests, then again under ASan+UBSan, and the
#                   concurrency tests under TSan; ends with "N passed, N failed"
#   make test-stress  the same with competing CPU load (stress-ng), STRESS_RUNS times
#   make bench      benchmark figures (never enforced by tests)
#   make bench-fidelity  the planner's estimates against measured runs (rewrites docs/fidelity.md's tables)
#   make bench-recipes   the megatron target's optimum against published layouts (rewrites a docs/optimizer.md table)
#   make bench-dag  wide layer graphs (frontiers of 5 to 8): which path proves them, how fast
#   make bench-galvatron  uniap's estimates against Galvatron v2.4.0's own cost model and search
#                   on its measured profiles (needs GALVATRON_SRC; tables in build/galvatron/table.md)
#   make fidelity-baseline  the fidelity ratchet's sets and baseline, anew (a commit that says why)
#   make ui         the web UI's files (ui/) as the C table compiled into uniapd; lists them
#   make clean
#
# A variant build goes to its own folder: make BUILD=build/asan SAN=asan
# Every source file under core/, json/ and cli/ is picked up by wildcard.

BUILD ?= build
SAN ?=

CC ?= cc
PKGS := cbc libcjson gsl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
TEST_LIBS := $(shell pkg-config --libs cmocka libcurl 2>/dev/null || echo -lcmocka -lcurl)
# the service's libraries: only uniapd and the tests link them, never uniap
SERVER_PKGS := sqlite3 libpq libmicrohttpd nettle zlib
SERVER_CFLAGS := $(shell pkg-config --cflags $(SERVER_PKGS) 2>/dev/null)
SERVER_LIBS := $(shell pkg-config --libs $(SERVER_PKGS) 2>/dev/null)
# What building and testing need, checked before anything compiles:
# scripts/check-deps.sh names the Debian package of each missing command,
# pkg-config module or library (every -l of the modules' --libs) in one line.
# make CHECK_DEPS= skips the check (a machine whose packages have other names).
BUILD_NEEDS := cmd:$(firstword $(CC)) $(PKGS:%=pc:%) $(SERVER_PKGS:%=pc:%)
TEST_NEEDS := $(BUILD_NEEDS) pc:cmocka pc:libcurl cmd:curl cmd:sqlite3 cmd:jq
# the fuzz targets (make fuzz, and briefly in make test): clang and its libFuzzer runtime
FUZZ_CC ?= clang
FUZZ_NEEDS := cmd:$(FUZZ_CC) lib:clang_rt.fuzzer-$(shell uname -m)
# only the benchmarks need wrk (deps/debian-bench.txt); building and testing never do
BENCH_NEEDS := cmd:wrk cmd:curl
# bench/fidelity.sh reads the runs documents with jq (deps/debian-bench.txt)
FIDELITY_NEEDS := cmd:jq
CHECK_DEPS ?= sh scripts/check-deps.sh

WARN := -std=c17 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla
OPT ?= -O2 -g
SAN_FLAGS_asan := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_FLAGS_tsan := -fsanitize=thread
# the libFuzzer targets' objects (fuzz/, docs/fuzzing.md): coverage for the
# fuzzer, ASan + UBSan for what it finds; the targets link -fsanitize=fuzzer
SAN_FLAGS_fuzz := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_FLAGS := $(SAN_FLAGS_$(SAN))
ifneq ($(SAN),)
OPT := -O1 -g
endif

CPPFLAGS += -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Icore -Ijson -Iserver
CFLAGS += $(WARN) $(OPT) $(SAN_FLAGS)
LDFLAGS += $(SAN_FLAGS)
LDLIBS += $(PKG_LIBS) -lpthread -lm

CORE_SRC := $(wildcard core/*.c)
JSON_SRC := $(wildcard json/*.c)
# server/main.c holds uniapd's main(); the rest is linked into the tests too
SERVER_MAIN := server/main.c
SERVER_SRC := $(filter-out $(SERVER_MAIN),$(wildcard server/*.c))
CLI_SRC := $(wildcard cli/*.c)
TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_SUPPORT_SRC := $(filter-out $(TEST_SRC),$(wildcard tests/unit/*.c))

CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/obj/%.o)
JSON_OBJ := $(JSON_SRC:%.c=$(BUILD)/obj/%.o)
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SUPPORT_OBJ := $(TEST_SUPPORT_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)

# uniapd's generated sources (server/openapi_doc.h, server/buildinfo.h,
# server/ui_assets.h): the OpenAPI document compiled in, the version and
# commit it was built from, and the web UI's files
GEN_SRC := $(BUILD)/gen/openapi_doc.c $(BUILD)/gen/buildinfo.c $(BUILD)/gen/ui_assets.c
GEN_OBJ := $(GEN_SRC:$(BUILD)/gen/%.c=$(BUILD)/obj/gen/%.o)
# `make VERSION=1.2.3 GIT_COMMIT=abc` where there is no git (a container build)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
GIT_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)

CORE_LIB := $(BUILD)/libuniapcore.a
JSON_LIB := $(BUILD)/libuniapjson.a

# keep object files that only pattern rules produce (no re-compiles, no rm noise)
.SECONDARY:

.PHONY: all example test test-unit test-asan test-tsan test-fresh bench clean tests-bin FORCE
.PHONY: check-build-deps check-test-deps check-bench-deps check-fuzz-deps fuzz fuzz-bin
.PHONY: ui ui-assets
.DEFAULT_GOAL := all

check-build-deps:
	@$(if $(CHECK_DEPS),$(CHECK_DEPS) $(BUILD_NEEDS),:)

check-test-deps:
	@$(if $(CHECK_DEPS),$(CHECK_DEPS) $(TEST_NEEDS),:)

check-bench-deps:
	@$(if $(CHECK_DEPS),$(CHECK_DEPS) $(BENCH_NEEDS),:)

# clang and libFuzzer's runtime (the library is looked up through clang)
check-fuzz-deps:
	@$(if $(CHECK_DEPS),CC=$(FUZZ_CC) $(CHECK_DEPS) $(FUZZ_NEEDS),:)

all: $(BUILD)/uniap $(if $(wildcard $(SERVER_MAIN)),$(BUILD)/uniapd)

# order-only: the check runs first (once) but never makes a file out of date
$(BUILD)/obj/%.o: %.c | check-build-deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(SERVER_CFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# schema/openapi.json as a byte array (od and sed are POSIX; xxd is not in
# build-essential); rebuilt when the document changes
$(BUILD)/gen/openapi_doc.c: schema/openapi.json
	@mkdir -p $(dir $@)
	{ printf '/* generated by the Makefile from schema/openapi.json: do not edit */\n#include "openapi_doc.h"\n\n'; \
	  printf 'const unsigned char openapi_doc_json[] = {\n'; \
	  od -An -v -tx1 schema/openapi.json | sed 's/[0-9a-f][0-9a-f]/0x&,/g'; \
	  printf '0x00};\nconst size_t openapi_doc_json_len = sizeof(openapi_doc_json) - 1;\n'; } >$@.tmp && mv $@.tmp $@

# The web UI (server/ui_assets.h): every file directly in ui/ named [a-z0-9.-]+
# with a known extension, as a byte array (od + sed, as above) and a table
# {name, content type, bytes, length} in name order; other files are left out.
# Rebuilt when a file of ui/ changes, and when one comes or goes (the list).
UI_FILES := $(sort $(wildcard ui/*))

$(BUILD)/gen/ui_assets.list: FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' $(UI_FILES) >$@.tmp; if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/gen/ui_assets.c: $(UI_FILES) $(BUILD)/gen/ui_assets.list
	@mkdir -p $(dir $@)
	@set -e; n=0; tab=; \
	{ printf '/* generated by the Makefile from ui/: do not edit */\n#include "ui_assets.h"\n\n'; \
	  for f in $(UI_FILES); do \
	    name=$${f#ui/}; \
	    case $$name in *[!a-z0-9.-]*) continue ;; esac; \
	    case $$name in \
	    *.html) type='text/html; charset=utf-8' ;; \
	    *.js) type='text/javascript; charset=utf-8' ;; \
	    *.css) type='text/css; charset=utf-8' ;; \
	    *.svg) type='image/svg+xml' ;; \
	    *.png) type='image/png' ;; \
	    *.ico) type='image/x-icon' ;; \
	    *.json) type='application/json' ;; \
	    *.txt) type='text/plain; charset=utf-8' ;; \
	    *) continue ;; \
	    esac; \
	    [ -f "$$f" ] || continue; \
	    printf '/* ui asset: %s %s bytes, %s */\nstatic const unsigned char ui_asset_%d[] = {\n' \
	      "$$name" "$$(wc -c <"$$f" | tr -d ' ')" "$$type" "$$n"; \
	    od -An -v -tx1 "$$f" | sed 's/[0-9a-f][0-9a-f]/0x&,/g'; \
	    printf '0x00};\n\n'; \
	    tab="$$tab\t{\"$$name\", \"$$type\", ui_asset_$$n, sizeof(ui_asset_$$n) - 1},\n"; \
	    n=$$((n + 1)); \
	  done; \
	  printf "const struct ui_asset ui_assets[] = {\n$$tab\t{NULL, NULL, NULL, 0},\n};\n"; \
	  printf 'const size_t ui_asset_count = %d;\n' "$$n"; } >$@.tmp && mv $@.tmp $@

# `make ui`: the table, then one line per asset.  Other targets may add
# prerequisites to ui (keep this rule's name: ui-assets).
ui-assets: $(BUILD)/gen/ui_assets.c
	@sed -n 's|^/\* ui asset: \(.*\) \*/$$|ui: \1|p' $<
	@echo "ui: $$(grep -c '^/\* ui asset: ' $<) assets in $<"

ui: ui-assets ui-test-deps

# The UI end-to-end test's npm packages (tests/cli/ui-e2e.sh, tests/ui/e2e.js):
# puppeteer-core and axe-core exactly as tests/ui/package-lock.json pins them
# (npm ci: the lock file only, no install scripts, no browser download), in
# build/ui-test/node_modules; redone only when the package files are newer.
UI_TEST_DIR := build/ui-test
.PHONY: ui-test-deps
ui-test-deps: $(UI_TEST_DIR)/node_modules
$(UI_TEST_DIR)/node_modules: tests/ui/package.json tests/ui/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "make: npm not found (Debian package npm); run: sh scripts/install-deps.sh" >&2; exit 1; }
	@mkdir -p $(UI_TEST_DIR)
	@cp tests/ui/package.json tests/ui/package-lock.json $(UI_TEST_DIR)/
	(cd $(UI_TEST_DIR) && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund) || \
		{ rm -rf $(UI_TEST_DIR)/node_modules; exit 1; }
	@touch $@

# rewritten only when VERSION or GIT_COMMIT changed, so an unchanged build relinks nothing
$(BUILD)/gen/buildinfo.c: FORCE
	@mkdir -p $(dir $@)
	@v=$$(printf '%s' '$(VERSION)' | tr -cd 'A-Za-z0-9._+-'); g=$$(printf '%s' '$(GIT_COMMIT)' | tr -cd 'A-Za-z0-9._+-'); \
	printf '/* generated by the Makefile: do not edit */\n#include "buildinfo.h"\n\nconst char buildinfo_version[] = "%s";\nconst char buildinfo_git_commit[] = "%s";\n' \
		"$${v:-unknown}" "$${g:-unknown}" >$@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(CORE_LIB): $(CORE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(JSON_LIB): $(JSON_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/uniap: $(CLI_OBJ) $(BUILD)/obj/gen/buildinfo.o $(JSON_LIB) $(CORE_LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/obj/gen/buildinfo.o $(JSON_LIB) $(CORE_LIB) $(LDLIBS)

$(BUILD)/uniapd: $(SERVER_MAIN:%.c=$(BUILD)/obj/%.o) $(SERVER_OBJ) $(GEN_OBJ) $(JSON_LIB) $(CORE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(SERVER_LIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_SUPPORT_OBJ) $(SERVER_OBJ) $(JSON_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_SUPPORT_OBJ) $(SERVER_OBJ) $(JSON_LIB) $(CORE_LIB) $(LDLIBS) \
		$(SERVER_LIBS) $(TEST_LIBS)

# libFuzzer targets: fuzz/fuzz_NAME.c -> $(BUILD)/fuzz/fuzz_NAME, built by
# `make fuzz-bin` in build/fuzz with clang (SAN=fuzz), against the same
# libraries as the tests; of the service only the HTTP layer (request
# structs, routing, problems: no store, no jobs), which keeps the build short
FUZZ_SERVER_OBJ := $(patsubst %,$(BUILD)/obj/server/%.o,http http_msg route problem)
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_BUILD := build/fuzz
FUZZ_MAKE := $(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) SAN=fuzz CC=$(FUZZ_CC)

$(BUILD)/fuzz/%: $(BUILD)/obj/fuzz/%.o $(FUZZ_SERVER_OBJ) $(JSON_LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_SERVER_OBJ) $(JSON_LIB) $(CORE_LIB) $(LDLIBS) $(SERVER_LIBS)

$(FUZZ_SRC:%.c=$(BUILD)/obj/%.o): | check-fuzz-deps

ifeq ($(SAN),fuzz)
fuzz-bin: $(FUZZ_BIN)
else
fuzz-bin:
	@+$(FUZZ_MAKE) fuzz-bin
endif

# Every target for FUZZ_SECONDS (60) on a scratch copy of its corpus
# (fuzz/corpus/NAME/, never written to); one line per target with the
# executions and coverage reached; a finding stops it with the input's path.
FUZZ_SECONDS ?= 60
fuzz: fuzz-bin
	@sh fuzz/run.sh $(FUZZ_BUILD)/fuzz $(FUZZ_SECONDS)

# the tests' objects need cmocka's and libcurl's headers: check those first too
$(TEST_OBJ) $(TEST_SUPPORT_OBJ): | check-test-deps

tests-bin: $(BUILD)/uniap $(if $(wildcard $(SERVER_MAIN)),$(BUILD)/uniapd) $(TEST_BIN)

# One pass of the suite on the binaries of $(BUILD); prints per-suite lines.
# tests/build.sh runs each pass's build and, when it fails, leaves the note
# that `make test` prints at its end (which pass, the first error).  Each build
# uses TEST_BUILD_JOBS jobs (default: the number of processors), its output
# grouped per target (-Otarget) so that note quotes one compile's lines; the
# programs then run TEST_JOBS at once (tests/run.sh says how; tests/README.md why none runs alone).
TEST_BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
TEST_MAKE = $(MAKE) --no-print-directory -j$(TEST_BUILD_JOBS) -Otarget
# The libFuzzer targets are built here too (a failed build is counted, the
# pass goes on); tests/cli/fuzz.sh runs each for 1 s (make test is near its budget).
test-unit:
	@sh tests/build.sh plain $(TEST_MAKE) tests-bin
	-@sh tests/build.sh fuzz $(TEST_MAKE) fuzz-bin
	@TEST_PASS=plain UNIAP=$(BUILD)/uniap UNIAPD=$(BUILD)/uniapd sh tests/run.sh $(BUILD)/tests $(TEST_BIN) tests/cli/*.sh

# Every program and script under ASan + UBSan but tests/cli/browser.sh: a real
# browser (Chromium) as a client takes about 170 s under ASan and exercises no
# server code that the sanitized test_http (CORS, preflights), sse.sh (event
# streams) and jobs.sh do not; it runs in the plain pass.  Nor tests/cli/fuzz.sh:
# the fuzz targets are built with ASan + UBSan already.  Nor tests/cli/ui-e2e.sh,
# for the same reason as browser.sh: the sanitized tests/cli/ui.sh covers the
# serving of /ui/, and Chromium's plan jobs would take minutes (make test is
# near its budget); it runs in the plain pass (UNIAP_SANITIZED=1 runs it by hand).
# Nor tests/cli/replicas.sh: three replicas solving 200 plans, minutes under ASan, on
# the store code that tests/cli/pg.sh (test_store and api.sh on PostgreSQL) runs here.
ASAN_SCRIPTS := $(filter-out tests/cli/browser.sh tests/cli/fuzz.sh tests/cli/ui-e2e.sh tests/cli/replicas.sh tests/cli/graph.sh,$(wildcard tests/cli/*.sh))
test-asan:
	@sh tests/build.sh asan $(TEST_MAKE) BUILD=build/asan SAN=asan tests-bin
	@TEST_PASS=asan UNIAP=build/asan/uniap UNIAPD=build/asan/uniapd UNIAP_SANITIZED=1 ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp UBSAN_OPTIONS=print_stacktrace=1 \
		sh tests/run.sh build/asan/tests $(TEST_BIN:$(BUILD)/tests/%=build/asan/tests/%) $(ASAN_SCRIPTS)

# Concurrency tests (thread pool, worker processes) under ThreadSanitizer.
TSAN_TESTS := $(filter $(BUILD)/tests/test_pool% $(BUILD)/tests/test_store% $(BUILD)/tests/test_http $(BUILD)/tests/test_runner $(BUILD)/tests/test_offload,$(TEST_BIN))
# The whole service too: tests/cli/jobs.sh drives a TSan uniapd (HTTP threads, job
# threads, store, cache) with concurrent clients, tests/cli/sse.sh its waits and
# event streams (suspended connections, the watcher thread), tests/cli/calibrations.sh
# calibrations fitted and canceled on job threads, tests/cli/allocations.sh allocations
# planned on the shared pool, stopped and canceled.
test-tsan:
	@sh tests/build.sh tsan $(TEST_MAKE) BUILD=build/tsan SAN=tsan $(TSAN_TESTS:$(BUILD)/%=build/tsan/%) build/tsan/uniap build/tsan/uniapd
	@TEST_PASS=tsan UNIAP=build/tsan/uniap UNIAPD=build/tsan/uniapd UNIAP_SANITIZED=1 TSAN_OPTIONS=halt_on_error=1 \
		sh tests/run.sh build/tsan/tests $(TSAN_TESTS:$(BUILD)/tests/%=build/tsan/tests/%) tests/cli/jobs.sh tests/cli/sse.sh tests/cli/calibrations.sh tests/cli/allocations.sh tests/cli/attack-streams.sh

# Every program of the ASan and TSan passes, built but not run: make
# test-fresh runs it after the plain pass on a bare Debian 12, to show that
# the sanitizer passes need no package the plain pass lacks (their runtimes
# come with gcc: build-essential).
.PHONY: sanitizer-builds
sanitizer-builds:
	@$(TEST_MAKE) BUILD=build/asan SAN=asan tests-bin
	@$(TEST_MAKE) BUILD=build/tsan SAN=tsan $(TSAN_TESTS:$(BUILD)/%=build/tsan/%) build/tsan/uniap build/tsan/uniapd

# The full suite: plain, ASan+UBSan, TSan; the summary line comes last, after
# one line per failed build or test program (build/.test-notes).  A pass whose
# build fails counts as one failure, so the summary never hides it.
# TEST_PASSES picks passes (plain asan tsan, in that order); make test-fresh
# runs the plain one only (tests/README.md says why).
TEST_PASSES ?= plain asan tsan
# one recipe line per pass: a pass that fails never stops the next
define test_pass
-@$(MAKE) --no-print-directory $(if $(filter plain,$(1)),test-unit,test-$(1))

endef
test:
	@rm -f build/.test-counts build/.test-notes build/.test-times build/.test-passes; mkdir -p build
	@echo "all start $$(date +%s)" >build/.test-passes
	$(foreach p,$(TEST_PASSES),$(call test_pass,$(p)))
	@sh tests/summary.sh build/.test-counts build/.test-notes build/.test-times build/.test-passes

# The whole suite with the machine busy: STRESS_CPU (4) stress-ng workers
# beside it, STRESS_RUNS (1) times in a row (tests/stress.sh; stress-ng is in
# deps/debian-bench.txt).  Every run must end "N passed, 0 failed".
STRESS_CPU ?= 4
STRESS_RUNS ?= 1
.PHONY: test-stress
test-stress:
	@$(if $(CHECK_DEPS),$(CHECK_DEPS) cmd:stress-ng,:)
	@sh tests/stress.sh $(STRESS_CPU) $(STRESS_RUNS)

# The README's two commands on a bare Debian 12 (debootstrap minbase) in a
# chroot: the test command, then make run driven through examples/flow.sh.
# Needs root and the network; about 13 min on 2 shared cores; ends "fresh-machine: N passed, N failed".
test-fresh:
	@sh scripts/fresh-machine.sh

# The main job until the service lands: plan-related commands on the examples.
example: all
	@sh scripts/example.sh $(BUILD)/uniap

# Every figure: the planner (bench/run.sh), then the service's plan jobs
# (bench/jobs.sh), HTTP layer (bench/http.sh, needs wrk: the check comes
# first and says how to install it) and the service under attack (bench/attack.sh).
# The whole output also replaces the generated region of docs/benchmarks.md.
bench: check-bench-deps all
	@{ sh bench/run.sh $(BUILD)/uniap && sh bench/jobs.sh $(BUILD)/uniapd && \
	   sh bench/http.sh $(BUILD)/uniapd && bash bench/attack.sh $(BUILD)/uniapd; echo $$? >$(BUILD)/bench.rc; } 2>&1 | \
	   tee $(BUILD)/bench.txt; exit "$$(cat $(BUILD)/bench.rc)"
	@{ echo "Last run: $$(date -u +%Y-%m-%d), $$(nproc) cores, revision $$(git describe --always --dirty 2>/dev/null || echo unknown)."; \
	   echo; echo '```text'; cat $(BUILD)/bench.txt; echo '```'; } >$(BUILD)/bench.md
	@sh scripts/doc-region.sh docs/benchmarks.md bench $(BUILD)/bench.md

# The planner's estimates against the UniAP paper's measured training runs
# (bench/fidelity/, docs/fidelity.md): Markdown tables of measured vs predicted
# samples/s, datasheet and calibrated; under 10 minutes on 2 cores.  Not part
# of make test: figures, never assertions.  The tables also replace the
# generated section of docs/fidelity.md (never edited by hand).
bench-fidelity: all
	@$(if $(CHECK_DEPS),$(CHECK_DEPS) $(FIDELITY_NEEDS),:)
	@sh bench/fidelity.sh $(BUILD)/uniap | tee $(BUILD)/fidelity.md
	@sh scripts/doc-region.sh docs/fidelity.md bench-fidelity $(BUILD)/fidelity.md

# The fidelity ratchet's inputs, anew: the cells as fixed configurations
# (bench/fidelity/sets/, optimum cells planned on the datasheet clusters) and
# the baseline errors (tests/data/fidelity-baseline.tsv).  Only in a commit
# that says why the figures change.
fidelity-baseline: all
	@$(if $(CHECK_DEPS),$(CHECK_DEPS) $(FIDELITY_NEEDS),:)
	@SETS=bench/fidelity/sets sh bench/fidelity.sh $(BUILD)/uniap >/dev/null
	@UNIAP=$(BUILD)/uniap FIDELITY_WRITE=1 sh tests/cli/fidelity.sh
	@python3 scripts/ui-fidelity.py

# uniap's estimates against Galvatron v2.4.0's own cost model on its measured
# A100 profiles (bench/galvatron/): uniap's galvatron-target plans and
# Galvatron's own search picks, each priced by both (about 45 minutes on 2
# cores, mostly Galvatron's searches).  Needs GALVATRON_SRC (a checkout of
# PKU-DAIR/Hetu-Galvatron at 498bcade), python3-numpy, g++ and pybind11-dev.
# Writes the tables into docs/galvatron.md; with SETS=bench/fidelity/sets also
# the fidelity ratchet's Galvatron set (a commit that says why).
# The megatron target's optimum against the published layouts of today's large runs
# (bench/recipes/), both priced by uniap; rewrites docs/optimizer.md's region.
bench-recipes: all
	@sh bench/recipes.sh $(BUILD)/uniap | tee $(BUILD)/recipes.md
	@sh scripts/doc-region.sh docs/optimizer.md bench-recipes $(BUILD)/recipes.md

bench-galvatron: all
	@sh bench/galvatron/agreement.sh && sh bench/galvatron/search.sh && $${PYTHON:-/usr/bin/python3} bench/galvatron/compare.py >build/galvatron/table.md && cat build/galvatron/table.md
	@sh scripts/doc-region.sh docs/galvatron.md bench-galvatron build/galvatron/table.md

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# Local single-user service: uniapd on 127.0.0.1:$(PORT) (8080), store in $(DB)
# (var/uniap.db; var/ is git-ignored), no keys (--no-auth is loopback-only).
# Ctrl-C stops it.  tests/cli/readme.sh starts uniapd with this recipe
# (make -n run PORT=0 DB=...), so the README's flow is tested against it.
.PHONY: run bench-http bench-jobs bench-fidelity bench-recipes bench-galvatron fidelity-baseline bench-attack bench-scale bench-replicas bench-allocate bench-dag
PORT ?= 8080
DB ?= var/uniap.db
run: all
	@mkdir -p $(dir $(DB))
	$(BUILD)/uniapd --listen 127.0.0.1:$(PORT) --db $(DB) --no-auth

# HTTP figures of uniapd under wrk (Debian package wrk): /healthz and one
# authenticated store read; one "http: PATH N req/s p99 X ms" line each.
bench-http: check-bench-deps all
	@sh bench/http.sh $(BUILD)/uniapd

# Plan throughput of 1, 2 and 3 uniapd replicas on one PostgreSQL server
# (started in a temporary folder; Debian's postgresql), against one uniapd on
# SQLite, with each replica's CPU seconds (bench/replicas.sh, docs/scale.md).
bench-replicas: all
	@sh bench/replicas.sh $(BUILD)/uniapd

# The optimizer at scale: 80 layers on 1024 H100s and 126 layers on 16,384 H100s
# (about 30 s on 2 cores; bench/scale.sh).
bench-scale: all
	@sh bench/scale.sh $(BUILD)/uniap

# Wide layer graphs (frontiers of 5 to 8): U-Net-like models planned and random
# graphs on the AUTO path (bench/dag.sh, docs/optimizer.md "dp-dag"); about 5
# minutes on 2 cores.
bench-dag: all
	@sh bench/dag.sh $(BUILD)/uniap

# Sharing a cluster: a seeded 50-job workload on 64 DGX A100 nodes replayed under
# uniap allocate and three baselines (bench/allocate.py, docs/allocation.md); a few
# minutes, most of them planning each kind of job once per size.
bench-allocate: all
	@python3 bench/allocate.py $(BUILD)/uniap

# The "under attack" line: a well-behaved tenant's GET p99 and small plan job
# while a slowloris, heavy evaluates and another tenant's heavy jobs run at once.
bench-attack: check-bench-deps all
	@bash bench/attack.sh $(BUILD)/uniapd

# Plan-job figures of uniapd: the cost cache's speed-up on a repeated plan
# request, and plan throughput with many queued jobs.
bench-jobs: all
	@sh bench/jobs.sh $(BUILD)/uniapd
