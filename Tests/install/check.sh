#!/usr/bin/env bash
# `make install` and `make uninstall` into a scratch prefix, with the debug build `make test` has
# just made (in build folder $1, default .build). Runs outside `swift test`: SwiftPM's build lock is
# held while tests run.
set -euo pipefail
cd "$(dirname "$0")/../.."
scratch=${1:-.build}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "install-check: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

make -s install CONFIG=debug PREFIX="$prefix" >/dev/null
[ "$("$prefix/bin/runner" --version)" = "$("$scratch/debug/runner" --version)" ] || fail "installed binary does not run"
grep -q '^\.Dt RUNNER 1' "$prefix/share/man/man1/runner.1" || fail "no man page"
grep -q 'retry-failed' "$prefix/share/man/man1/runner.1" || fail "man page lacks the run options"
grep -q 'unblock' "$prefix/share/bash-completion/completions/runner" || fail "bash completion lacks subcommands"
bash -c "source '$prefix/share/bash-completion/completions/runner' && complete -p runner" >/dev/null || fail "bash completion does not load"
grep -q '^#compdef runner' "$prefix/share/zsh/site-functions/_runner" || fail "no zsh completion"
grep -q '^complete -c .runner' "$prefix/share/fish/vendor_completions.d/runner.fish" || fail "no fish completion"
make -s uninstall CONFIG=debug PREFIX="$prefix"
left=$(find "$prefix" -type f)
[ -z "$left" ] || fail "uninstall left: $left"
echo "install-check: 1 passed, 0 failed"
