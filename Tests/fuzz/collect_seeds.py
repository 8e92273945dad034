#!/usr/bin/env python3
"""Collects the chain steps and formats the test suite writes in its job texts into
Tests/fuzz/seeds/ops.json and formats.json, the job-file fuzzer's material for crossover.
Run it again after adding tests; only literal JSON (no Swift interpolation) is taken."""
import glob
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
NESTED = r'[^{}]*(\{[^{}]*\}[^{}]*)*\}'


def collect(pattern):
    found = set()
    for path in sorted(glob.glob(os.path.join(TESTS, "*", "*.swift"))):
        with open(path) as handle:
            text = handle.read()
        for match in re.finditer(pattern + NESTED, text):
            snippet = match.group(0)
            if "\\(" in snippet:
                continue
            try:
                found.add(json.dumps(json.loads(snippet), sort_keys=True))
            except ValueError:
                pass
    return [json.loads(item) for item in sorted(found)]


for name, pattern in (("ops", r'\{"op": ?"[a-zA-Z]+"'), ("formats", r'\{"type": ?"[a-z]+"')):
    items = collect(pattern)
    with open(os.path.join(HERE, "seeds", name + ".json"), "w") as handle:
        json.dump(items, handle, indent=0, sort_keys=True)
        handle.write("\n")
    print("%s: %d" % (name, len(items)))
