#!/usr/bin/env bash
# `make install` and `make uninstall` into a scratch prefix, with the debug build `make test` has
# just made (in build folder $1, default .build). Runs outside `swift test`: SwiftPM's build lock is
# held while tests run. What `make install` installs stands alone: no RUNPATH names a folder outside
# the prefix, and the installed runner runs (a job with an AVIF output, from libvips' modules) with
# LD_LIBRARY_PATH empty and this clone's libvips and the toolchain's libraries hidden (a private
# mount namespace: `unshare -m` as root, `unshare -rm` otherwise; said and skipped when neither works).
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

# No RUNPATH names the clone, the toolchain, or any folder but the prefix's own, relatively.
[ "$(readelf -d "$prefix/bin/runner" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')" = '$ORIGIN/../lib/runner' ] \
    || fail "bin/runner's RUNPATH: $(readelf -d "$prefix/bin/runner" | grep -E 'RUNPATH|RPATH')"
while read -r file; do
    runpath=$(readelf -d "$file" | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p')
    case $runpath in '' | '$ORIGIN' | '$ORIGIN/../..') ;; *) fail "${file#"$prefix"/}'s RUNPATH is $runpath" ;; esac
done < <(find "$prefix/lib" -name '*.so*' -type f)
if [ "${LIBVIPS:-built}" != system ]; then
    [ -f "$prefix/lib/runner/libvips.so.42" ] || fail "no private libvips in lib/runner"
    ls "$prefix"/lib/runner/lib/vips-modules-*/vips-heif.so >/dev/null || fail "no libvips modules in lib/runner/lib"
fi

# The installed runner runs a job (workers, libvips' modules) with what it was built from out of sight.
hidden=()
for library in libvips.so libswiftCore.so; do
    found=$(ldd "$scratch/debug/runner" | awk -v name="$library" 'index($1, name) == 1 {print $3}')
    case $found in "" | /lib/* | /usr/lib/*) ;; *) hidden+=("$(dirname "$found")") ;; esac
done
work=$(mktemp -d "$prefix/work.XXXXXX")
mkdir "$work/src" "$work/empty"
cp fixtures/extra/ladybird.jpg "$work/src/"
cat >"$work/job.json" <<'JOB'
{"version": 1, "sources": [{"path": "src"}], "state": "state.sqlite",
 "outputs": [{"name": "a", "path": "out/{stem}.avif", "chain": [{"op": "thumbnail", "width": 64, "fit": "inside"}], "format": {"type": "avif"}}]}
JOB
script='for folder in "$@"; do mount --bind "$0/empty" "$folder"; done; LD_LIBRARY_PATH= "$0/../bin/runner" formats | grep -q "^AVIF  *yes  *yes" && LD_LIBRARY_PATH= "$0/../bin/runner" --quiet "$0/job.json"'
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then isolate=(unshare -m --propagation private); \
elif unshare -rm true 2>/dev/null; then isolate=(unshare -rm --propagation private); else isolate=(); fi
if [ ${#isolate[@]} -gt 0 ]; then
    out=$(env -u VIPSHOME "${isolate[@]}" sh -c "$script" "$work" "${hidden[@]}" 2>&1) \
        || fail "the installed runner, with ${hidden[*]} hidden: $out"
    head -c 12 "$work/out/ladybird.avif" | grep -q ftypavif || fail "the installed runner wrote no AVIF"
else
    echo "install-check: no mount namespace here (unshare): the installed runner is not run with the build hidden" >&2
fi

make -s uninstall CONFIG=debug PREFIX="$prefix"
rm -rf "$work"
left=$(find "$prefix" -type f)
[ -z "$left" ] || fail "uninstall left: $left"
echo "install-check: 1 passed, 0 failed"
