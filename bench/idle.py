#!/usr/bin/env python3
"""Where the cores sit idle while a command runs (issue 15, section 3).

    python3 bench/idle.py [--interval 0.01] [--cores 2] [--json OUT] -- COMMAND...

Runs COMMAND and samples /proc every --interval seconds: for each thread of its process tree, the
scheduler state (/proc/PID/task/TID/stat: R running or runnable, S sleeping, D uninterruptible),
for a sleeping thread the syscall it sleeps in (/proc/PID/task/TID/syscall; for read/write/poll,
what the fd is: a pipe, a socket, a file) or "page fault / no syscall", and its CPU time so far.
Around the run it reads `perf stat`-like totals from /proc: the tree's CPU time (wait4), and the
machine's busy time (/proc/stat), so other load is visible.

Reports:
- cores used by the tree = CPU / wall, and idle core-seconds = cores x wall - tree CPU - other load;
- that idle time by phase: start-up (until the tree first keeps every core busy), middle, and
  tail (after the last sample with every core busy), from the samples;
- the middle's idle, attributed to what the tree's recently active threads were blocked in
  (a thread that ran in the last 0.2 s and now sleeps is why a core is free);
- for every thread that did work, the share of its samples in each state.
The sampler itself costs a few % of one core (reported as "harness CPU s").
"""
import argparse
import collections
import json
import os
import resource
import signal
import subprocess
import sys
import time

from bench import process_tree

SYSCALLS = {0: "read", 1: "write", 7: "poll", 17: "pread64", 18: "pwrite64", 23: "select", 35: "nanosleep",
            61: "wait4", 74: "fsync", 75: "fdatasync", 202: "futex", 230: "clock_nanosleep", 232: "epoll_wait",
            257: "openat", 270: "pselect6", 271: "ppoll", 281: "epoll_pwait", 306: "syncfs", 435: "clone3",
            56: "clone", 59: "execve", 9: "mmap", 11: "munmap", 3: "close", 82: "rename", 264: "renameat",
            316: "renameat2", 87: "unlink", 263: "unlinkat", 5: "fstat", 262: "newfstatat", 4: "stat"}
TICK = os.sysconf("SC_CLK_TCK")


def fd_kind(pid, fd, cache):
    key = (pid, fd)
    if key not in cache:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            target = "?"
        cache[key] = ("pipe" if target.startswith("pipe:") else "socket" if target.startswith("socket:")
                      else "anon" if target.startswith("anon_inode:") else "file")
    return cache[key]


def busy_seconds():
    with open("/proc/stat") as handle:
        fields = [int(x) for x in handle.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / TICK


def role(pid, names):
    if pid not in names:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
            base = os.path.basename(argv[0].decode(errors="replace"))
            names[pid] = base + (" worker" if b"worker" in argv[1:2] else "")
        except OSError:
            names[pid] = "?"
    return names[pid]


def sample(pids, fds, names):
    """[(pid, tid, role, thread name, state, what, cpu ticks)] for every thread of these processes."""
    rows = []
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        who = role(pid, names)
        for tid in tids:
            base = f"/proc/{pid}/task/{tid}"
            try:
                with open(base + "/stat", "rb") as handle:
                    stat = handle.read()
                comm = stat[stat.index(b"(") + 1:stat.rindex(b")")].decode(errors="replace")
                fields = stat[stat.rindex(b")") + 2:].split()
                state, cpu = fields[0].decode(), int(fields[11]) + int(fields[12])
                what = ""
                if state in "SD":
                    with open(base + "/syscall") as handle:
                        parts = handle.read().split()
                    if parts and parts[0] == "running":
                        state = "R"
                    elif parts and parts[0] != "-1":
                        number = int(parts[0])
                        what = SYSCALLS.get(number, f"syscall {number}")
                        if number in (0, 1, 17, 18) and len(parts) > 1:
                            what += f"({fd_kind(pid, int(parts[1], 16), fds)})"
                    else:
                        what = "page fault / not in a syscall"
            except (OSError, ValueError, IndexError):
                continue
            rows.append((pid, int(tid), who, comm, state, what, cpu))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--interval", type=float, default=0.01)
    parser.add_argument("--cores", type=int, default=os.cpu_count())
    parser.add_argument("--json", help="write the summary here")
    parser.add_argument("--label", default="")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")

    fds, names = {}, {}
    samples = []  # (t, rows)
    usage_before = resource.getrusage(resource.RUSAGE_SELF)
    busy_before = busy_seconds()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, process_group=0)
    pids, refreshed = [process.pid], 0.0
    try:
        while True:
            # Walking all of /proc for the tree is what costs: only every 0.1 s (a new worker is
            # missed for at most that long).
            if time.perf_counter() - refreshed > 0.1:
                pids, refreshed = process_tree(process.pid), time.perf_counter()
            rows = sample(pids, fds, names)
            samples.append((time.perf_counter() - started, rows))
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(args.interval)
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    wall = time.perf_counter() - started
    busy = busy_seconds() - busy_before
    usage_after = resource.getrusage(resource.RUSAGE_SELF)
    harness = (usage_after.ru_utime + usage_after.ru_stime) - (usage_before.ru_utime + usage_before.ru_stime)
    cpu = usage.ru_utime + usage.ru_stime
    other = max(0.0, busy - cpu - harness)
    cores = args.cores

    # Per sample: how many of the tree's threads are running or runnable.
    running = [sum(1 for r in rows if r[4] == "R") for _, rows in samples]
    full = [i for i, n in enumerate(running) if n >= cores]
    first_full = full[0] if full else len(samples)
    last_full = full[-1] if full else len(samples) - 1
    phases = collections.Counter()
    blame = collections.Counter()
    last_ran = {}  # tid -> sample index when it was last seen running
    last_cpu = {}
    for index, (t, rows) in enumerate(samples):
        dt = (samples[index + 1][0] - t) if index + 1 < len(samples) else max(0.0, wall - t)
        idle = max(0, cores - running[index]) * dt
        for pid, tid, who, comm, state, what, ticks in rows:
            if state == "R" or ticks != last_cpu.get(tid, ticks):
                last_ran[tid] = index
            last_cpu[tid] = ticks
        phase = "start-up" if index < first_full else "tail" if index > last_full else "middle"
        phases[phase] += idle
        if idle and phase == "middle":
            recent = [(who, comm, what or state) for pid, tid, who, comm, state, what, _ in rows
                      if state != "R" and index - last_ran.get(tid, -10**9) <= max(1, round(0.2 / args.interval))]
            if recent:
                for item in recent:
                    blame[item] += idle / len(recent)
            else:
                blame[("(no thread of the tree ran in the last 0.2 s)", "", "")] += idle
    # Threads that did work: their state shares.
    states = collections.defaultdict(collections.Counter)
    worked = set()
    first_seen, last_seen_cpu = {}, {}
    for _, rows in samples:
        for pid, tid, who, comm, state, what, ticks in rows:
            first_seen.setdefault(tid, ticks)
            last_seen_cpu[tid] = ticks
    worked = {tid for tid in last_seen_cpu if last_seen_cpu[tid] - first_seen[tid] >= max(1, 0.02 * wall * TICK)}
    for _, rows in samples:
        for pid, tid, who, comm, state, what, ticks in rows:
            if tid in worked:
                states[(who, comm)]["running/runnable" if state == "R" else f"{state}: {what}"] += 1
    summary = {
        "label": args.label, "command": command, "wall": wall, "cpu": cpu, "cores_used": cpu / wall,
        "other_load": other / wall, "harness_cpu": harness, "samples": len(samples),
        "idle_core_seconds": max(0.0, cores * wall - cpu - other - harness),
        "idle_by_phase": {k: phases[k] for k in ("start-up", "middle", "tail")},
        "start_up_seconds": samples[first_full][0] if first_full < len(samples) else wall,
        "tail_seconds": wall - samples[last_full][0] if full else wall,
        "middle_idle_blame": [{"role": k[0], "thread": k[1], "blocked in": k[2], "core_seconds": v}
                              for k, v in blame.most_common(12)],
        "thread_states": {f"{who} / {comm}": {k: v / sum(c.values()) for k, v in c.most_common(6)}
                          for (who, comm), c in sorted(states.items())},
        "exit": os.waitstatus_to_exitcode(status),
        # wait4's rusage covers every waited-for process of the tree
        "minor_faults": usage.ru_minflt, "major_faults": usage.ru_majflt,
        "voluntary_switches": usage.ru_nvcsw, "involuntary_switches": usage.ru_nivcsw,
    }
    print(f"{args.label or command[0]}: wall {wall:.2f} s, CPU {cpu:.2f} s = {cpu / wall:.2f} cores; other load "
          f"{other / wall:.2f} cores; harness {harness:.2f} s; idle {summary['idle_core_seconds']:.2f} core-s "
          f"(samples: start-up {phases['start-up']:.2f} in the first {summary['start_up_seconds']:.2f} s, middle "
          f"{phases['middle']:.2f}, tail {phases['tail']:.2f} in the last {summary['tail_seconds']:.2f} s); exit {summary['exit']}; "
          f"faults {usage.ru_minflt} minor, {usage.ru_majflt} major; context switches {usage.ru_nvcsw} voluntary, "
          f"{usage.ru_nivcsw} involuntary")
    for item in summary["middle_idle_blame"]:
        print(f"   middle idle {item['core_seconds']:6.2f} core-s: {item['role']} / {item['thread']}: {item['blocked in']}")
    for name, shares in summary["thread_states"].items():
        print(f"   {name}: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in shares.items()))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(summary, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
