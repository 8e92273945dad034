#!/usr/bin/env bash
# Runs a set-up step with its output in a log file rather than on the terminal (`make deps`, `make
# run`): on success nothing more is printed; on failure the log is named with its last lines.
#
#   deps/quietly.sh LOG COMMAND [ARGUMENT...]
set -uo pipefail
LOG=${1:?usage: quietly.sh LOG COMMAND...}
shift
mkdir -p "$(dirname "$LOG")"
"$@" >"$LOG" 2>&1
status=$?
if [ "$status" != 0 ]; then
    echo "make: this step failed (exit $status): $*" >&2
    echo "make: the last lines of $LOG:" >&2
    tail -n 25 "$LOG" | sed 's/^/    /' >&2
fi
exit "$status"
