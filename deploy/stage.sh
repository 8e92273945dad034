#!/usr/bin/env bash
# Installs a built runner into a prefix that stands alone: `make install` and the Debian package
# (deploy/debian/build.sh) both install through this script, so there is one layout.
#
#   deploy/stage.sh [--strip] BINARY ROOT PREFIX MANUAL
#
# ROOT is DESTDIR (empty for the live system); the files go under ROOT/PREFIX:
#   bin/runner                               RUNPATH $ORIGIN/../lib/runner (nothing else)
#   lib/runner/libvips.so.42                 every library BINARY loads from outside the system's
#   lib/runner/...                           library folders (libvips 8.16 with Highway linked in; a
#                                            debug build's Swift runtime), RUNPATH $ORIGIN if one
#                                            needs another of them
#   lib/runner/lib/vips-modules-X.Y/*.so     libvips' modules, RUNPATH $ORIGIN/../..: runner sets
#                                            VIPSHOME to lib/runner, where libvips.so was loaded
#                                            from, and libvips loads VIPSHOME/lib/vips-modules-X.Y
#                                            (Sources/CVips/shim.h, cvips_use_private_modules)
#   share/man/man1/runner.1, share/{bash-completion,zsh,fish}/...: the manual and the completions
# Libraries in /lib, /usr/lib, /lib64 and /usr/lib64 are the system's (Debian's packages): they stay
# where they are. Nothing installed names the build folder; the check at the end says so.
# --strip strips the binary and libraries (the package does; `make install` keeps the symbols).
# Needs patchelf (Debian's package; `make install` installs it when missing).
set -euo pipefail
STRIP=0
[ "${1:-}" = --strip ] && { STRIP=1; shift; }
BINARY=$(readlink -f "${1:?usage: stage.sh [--strip] BINARY ROOT PREFIX MANUAL}")
ROOT=${2?}
PREFIX=${3:?}
MANUAL=${4:?}
DEST=$ROOT$PREFIX
PRIVATE=$DEST/lib/runner
die() { echo "stage: $*" >&2; exit 1; }
command -v patchelf >/dev/null || die "patchelf is missing (apt-get install patchelf)"

system_library() { case $1 in /lib/* | /usr/lib/* | /lib64/* | /usr/lib64/*) return 0 ;; *) return 1 ;; esac; }
# NAME PATH pairs of what FILE loads, as this machine resolves them.
loads() { ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'; }

VIPS=$(loads "$BINARY" | awk '$1 ~ /^libvips\.so/ {print $2}')
MODULES=""
if [ -n "$VIPS" ] && ! system_library "$VIPS"; then
    MODULES=$(find "$(dirname "$VIPS")" -maxdepth 1 -type d -name 'vips-modules-*' | head -1)
fi
declare -A PRIVATE_LIBS=()
while read -r name path; do
    system_library "$path" || PRIVATE_LIBS[$name]=$path
done < <({ loads "$BINARY"; [ -z "$MODULES" ] || for module in "$MODULES"/*.so; do loads "$module"; done; } | sort -u)

rm -rf "$PRIVATE"
install -d -m 755 "$DEST/bin" "$PRIVATE"
install -m 755 "$BINARY" "$DEST/bin/runner"
# A file's RUNPATH: RELATIVE when it needs one of the private libraries, none otherwise.
set_runpath() {
    local file=$1 relative=$2 needed
    for needed in $(patchelf --print-needed "$file"); do
        if [ -n "${PRIVATE_LIBS[$needed]:-}" ]; then patchelf --set-rpath "$relative" "$file"; return; fi
    done
    patchelf --remove-rpath "$file"
}
for name in "${!PRIVATE_LIBS[@]}"; do
    install -m 644 "${PRIVATE_LIBS[$name]}" "$PRIVATE/$name"
    set_runpath "$PRIVATE/$name" '$ORIGIN'
done
set_runpath "$DEST/bin/runner" '$ORIGIN/../lib/runner'
if [ -n "$MODULES" ]; then
    install -d -m 755 "$PRIVATE/lib/$(basename "$MODULES")"
    for module in "$MODULES"/*.so; do
        installed=$PRIVATE/lib/$(basename "$MODULES")/$(basename "$module")
        install -m 644 "$module" "$installed"
        set_runpath "$installed" '$ORIGIN/../..'
    done
fi
if [ "$STRIP" = 1 ]; then
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$DEST/bin/runner"
    find "$PRIVATE" -name '*.so*' -type f -exec strip --strip-unneeded --remove-section=.comment --remove-section=.note {} +
fi

install -D -m 644 "$MANUAL" "$DEST/share/man/man1/runner.1"
# zsh's fpath on Debian: vendor-completions for /usr (packages), site-functions for /usr/local.
ZSH=$DEST/share/zsh/site-functions
[ "$PREFIX" = /usr ] && ZSH=$DEST/share/zsh/vendor-completions
install -d -m 755 "$DEST/share/bash-completion/completions" "$ZSH" "$DEST/share/fish/vendor_completions.d"
# The installed binary writes its own completions: it runs from where it was put.
# bash-completion sources the file: no #! line (lintian: bash-completion-with-hashbang).
"$DEST/bin/runner" --generate-completion-script bash | sed '1{/^#!/d}' >"$DEST/share/bash-completion/completions/runner"
"$DEST/bin/runner" --generate-completion-script zsh >"$ZSH/_runner"
"$DEST/bin/runner" --generate-completion-script fish >"$DEST/share/fish/vendor_completions.d/runner.fish"
chmod 644 "$DEST/share/bash-completion/completions/runner" "$ZSH/_runner" \
    "$DEST/share/fish/vendor_completions.d/runner.fish"

# No RUNPATH installed names a folder outside the prefix (the build folder, the toolchain's).
for file in "$DEST/bin/runner" $(find "$PRIVATE" -name '*.so*' -type f); do
    runpath=$(patchelf --print-rpath "$file")
    case $runpath in '' | '$ORIGIN' | '$ORIGIN/../lib/runner' | '$ORIGIN/../..') ;; *) die "$file's RUNPATH is $runpath" ;; esac
done
