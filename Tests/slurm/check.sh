#!/usr/bin/env bash
# The deploy example on a real one-node Slurm cluster on 127.0.0.1: munged, slurmctld and slurmd
# started here from Debian's packages and stopped by their PIDs at the end. Checks that an array of
# shards does every item exactly once, that `runner status` of the sharded job totals what one
# machine does, and that a cancelled array task resubmitted alone resumes without redoing work.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
runner=${RUNNER:-$repo/.build/debug/runner}
[ -x "$runner" ] || { echo "test-slurm: build runner first ($runner)" >&2; exit 2; }
passed=0
fail() { echo "test-slurm: FAILED: $*" >&2; echo "$passed passed, 1 failed"; exit 1; }
ok() { passed=$((passed + 1)); echo "test-slurm: ok: $*"; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi

scratch=$(mktemp -d /tmp/runner-slurm-XXXXXX)
chmod 755 "$scratch"
pids=()
cleanup() {
    for pidfile in "$scratch/slurmd.pid" "$scratch/slurmctld.pid"; do
        [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    done
    [ -n "${munge_pid:-}" ] && kill "$munge_pid" 2>/dev/null || true
    sleep 1
    rm -rf "$scratch"
}
trap cleanup EXIT

# munge: a key, its folders, and a daemon of our own (its PID read back from its pid file).
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
fi
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
mkdir -p /var/lib/munge /var/log/munge /run/munge
chown munge:munge /var/lib/munge /var/log/munge /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged --force
    for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
    munge_pid=$(cat /run/munge/munged.pid)
fi
munge -n | unmunge | grep -q 'STATUS: *Success' || fail "munge does not work"

# slurm.conf: one node (this machine, on 127.0.0.1), free ports, everything under the scratch folder.
host=$(hostname -s)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
memory=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))
mkdir -p "$scratch/spool" "$scratch/state"
cat > "$scratch/slurm.conf" <<CONF
ClusterName=runner-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=$(port)
SlurmdPort=$(port)
StateSaveLocation=$scratch/state
SlurmdSpoolDir=$scratch/spool
SlurmctldPidFile=$scratch/slurmctld.pid
SlurmdPidFile=$scratch/slurmd.pid
SlurmctldLogFile=$scratch/slurmctld.log
SlurmdLogFile=$scratch/slurmd.log
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
MpiDefault=none
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$memory State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$scratch/slurm.conf
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 100); do sinfo -h -o %t 2>/dev/null | grep -qE '^idle' && break; sleep 0.2; done
sinfo -h -o %t | grep -qE '^idle' || { cat "$scratch"/*.log >&2; fail "the node did not come up"; }
ok "one-node cluster up ($(sinfo -h -o '%N %t %c CPUs'))"

# A job of 40 sources (hard links of the fixtures) with two outputs, on the "shared" filesystem.
work=$scratch/job
mkdir -p "$work/in"
photos=(fixtures/photos/friends.jpg fixtures/photos/fig-bowl.jpg fixtures/extra/ladybird.jpg)
for i in $(seq 0 39); do ln "${photos[$((i % 3))]}" "$work/in/$i.jpg"; done
write_job() {  # FOLDER STATE-AND-OUTPUT-PREFIX
    cat > "$1/job.json" <<JOB
{"version": 1, "name": "slurm",
 "sources": [{"path": "in"}],
 "outputs": [{"name": "t", "path": "$2out/t/{stem}.jpg",
              "chain": [{"op": "thumbnail", "width": 96, "height": 96, "fit": "cover"}], "format": {"type": "jpeg"}},
             {"name": "soft", "path": "$2out/soft/{stem}.jpg",
              "chain": [{"op": "blur", "sigma": 4}], "format": {"type": "jpeg"}}],
 "state": "$2state/slurm.sqlite"}
JOB
}
write_job "$work" ""
sbatch_args=(--wait --chdir "$work" --array=0-3%2 --cpus-per-task=1 --mem=1G)
RUNNER=$runner RUNNER_SHARDS=4 RUNNER_MAX_DURATION=10m sbatch "${sbatch_args[@]}" \
    "$repo/deploy/slurm/thumbs-array.sbatch" "$work/job.json" >/dev/null || { cat "$work"/runner-*.log >&2; fail "the array failed"; }
ok "sbatch --wait of the deploy example ran 4 shards"

# Every item done exactly once across the shard databases; no output written by two shards.
python3 - "$work/state" <<'PY' || fail "items not done exactly once across shards"
import sqlite3, sys, glob, collections
seen = collections.Counter()
for db in glob.glob(sys.argv[1] + "/slurm.shard-*-of-4.sqlite"):
    for key, state in sqlite3.connect(db).execute("SELECT key, state FROM item"):
        assert state == "done", (db, key, state)
        seen[key] += 1
assert len(seen) == 80 and set(seen.values()) == {1}, (len(seen), collections.Counter(seen.values()))
PY
[ "$(ls "$work/out/t" | wc -l)" = 40 ] && [ "$(ls "$work/out/soft" | wc -l)" = 40 ] || fail "outputs missing"
ok "80 items done exactly once across 4 shard databases"

# One answer for the whole job: `runner status` totals equal a single-machine run of the same job.
single=$scratch/single
mkdir -p "$single" && ln -s "$work/in" "$single/in"
write_job "$single" ""
"$runner" "$single/job.json" --quiet >/dev/null
totals() { "$runner" status "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"])'; }
[ "$(totals "$work/job.json")" = "$(totals "$single/job.json")" ] || fail "status totals differ: $(totals "$work/job.json") vs $(totals "$single/job.json")"
"$runner" status "$work/job.json" | grep -q "shard 3/4" || fail "status has no line per shard"
ok "runner status over the shards: $(totals "$work/job.json"), as on one machine"

# Cancel one array task mid-run, resubmit that index alone: it resumes, redoing nothing. Shard 1's
# last source in plan order (sorted by name) hangs its worker (the test trigger), so task 1 is still
# running when it is cancelled however fast this machine renders. Being the last, no task waits
# behind it in that worker's pipe (a worker holds two): everything else finishes first, whichever
# worker takes it. (The first source, as this once was, left a second one stuck behind it when its
# worker topped up before the other slot went hungry, a race the machine's speed decided.)
db1=$work/state/slurm.shard-1-of-4.sqlite
stuck=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT MAX(source_key) FROM item').fetchone()[0])" "$db1")
stuck=/in/${stuck##*/}
rm -rf "$work/out" "$work/state"
job_id=$(RUNNER=$runner RUNNER_SHARDS=4 RUNNER_TEST_HANG_ON=$stuck sbatch --parsable --chdir "$work" --array=0-3 \
    --cpus-per-task=2 --mem=1G "$repo/deploy/slurm/thumbs-array.sbatch" "$work/job.json")
count_in_1() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT COUNT(*) FROM item $1\").fetchone()[0])" "$db1" 2>/dev/null || echo 0; }
done_in_1() { count_in_1 "WHERE state='done'"; }
# Every item but the stuck source's two outputs.
for _ in $(seq 1200); do
    shard_total=$(count_in_1 "")
    [ "$shard_total" -gt 2 ] && [ "$(done_in_1)" -eq $((shard_total - 2)) ] && break
    sleep 0.1
done
[ "$(done_in_1)" -eq $((shard_total - 2)) ] || { squeue; cat "$work"/runner-*.log "$scratch"/slurmctld.log >&2; fail "task 1 did not reach its stuck source"; }
squeue -h -j "${job_id}_1" | grep -q . || fail "task 1 ended before it was cancelled"
scancel "${job_id}_1"
while squeue -h -j "$job_id" 2>/dev/null | grep -q .; do sleep 0.5; done
before=$(done_in_1)
[ "$before" -lt "$shard_total" ] || fail "task 1 finished its stuck source ($before of $shard_total)"
stamps_before=$(cd "$work/out" && find . -type f -printf '%p %T@\n' | sort)
RUNNER=$runner RUNNER_SHARDS=4 sbatch --wait --chdir "$work" --array=1 --cpus-per-task=1 --mem=1G \
    "$repo/deploy/slurm/thumbs-array.sbatch" "$work/job.json" >/dev/null || fail "the resubmitted index failed"
[ "$(done_in_1)" = "$shard_total" ] || fail "index 1 did not finish after resubmission"
stamps_after=$(cd "$work/out" && find . -type f -printf '%p %T@\n' | sort)
existing=$(comm -12 <(echo "$stamps_before" | awk '{print $1}') <(echo "$stamps_after" | awk '{print $1}') | wc -l)
unchanged=$(comm -12 <(echo "$stamps_before") <(echo "$stamps_after") | wc -l)
[ "$unchanged" = "$existing" ] || fail "the resumed shard rewrote finished outputs ($((existing - unchanged)) of $existing)"
ok "scancel of task 1 after $before of $shard_total items; resubmitted alone, it finished without rewriting any of the $existing outputs written before"

echo "test-slurm: $passed passed, 0 failed"
