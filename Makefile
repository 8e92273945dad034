# runner: set-up, build, run and test. `make run` and `make test` work on a fresh Debian machine.
SWIFT ?= swift
DEBIAN_PACKAGES := pkg-config libvips-dev libvips-tools libcurl4-openssl-dev libsqlite3-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build run test clean

# Installs the Debian packages when pkg-config (or the vips CLI the tests compare against) is missing them.
deps:
	@if ! command -v pkg-config >/dev/null || ! pkg-config --exists vips libcurl sqlite3 || ! command -v vipsthumbnail >/dev/null; then \
		echo "installing $(DEBIAN_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(DEBIAN_PACKAGES); \
	fi

build: deps
	$(SWIFT) build -c release

run: build
	.build/release/runner jobs/thumbs.json

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

clean:
	rm -rf .build out state
