#!/usr/bin/env python3
"""How long each test case ran, from a file written by
`REQUESTSET_TEST_TIMES=times.tsv swift test` (Tests/RequestSetTests/Support/OwnThreads.swift):
the slowest cases, the tests and suites by the sum of their cases, and how many ran at once.

    REQUESTSET_TEST_TIMES=/tmp/times.tsv swift test
    Scripts/test-times.py /tmp/times.tsv [how many rows]
"""
import collections
import sys

rows = []
for line in open(sys.argv[1], encoding="utf-8"):
    parts = line.rstrip("\n").split("\t")
    if len(parts) == 3:
        rows.append((float(parts[0]), float(parts[1]), parts[2]))
n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
if not rows:
    sys.exit("no test case ended in " + sys.argv[1])

def test_of(name):
    return name.split(" ", 1)[0]

def suite_of(name):
    return test_of(name).split("/", 1)[0].split(".")[-1]

print(f"{'seconds':>8}  slowest test cases")
for start, end, name in sorted(rows, key=lambda r: r[0] - r[1])[:n]:
    print(f"{end - start:8.1f}  {name}")
for title, key in (("tests", test_of), ("suites", suite_of)):
    sums = collections.defaultdict(float)
    for start, end, name in rows:
        sums[key(name)] += end - start
    print(f"\n{'seconds':>8}  {title} by the sum of their cases")
    for name, total in sorted(sums.items(), key=lambda kv: -kv[1])[:n]:
        print(f"{total:8.1f}  {name}")
first, last = min(r[0] for r in rows), max(r[1] for r in rows)
busy = sum(end - start for start, end, _ in rows)
print(f"\n{len(rows)} cases from {first:.1f} s to {last:.1f} s: {busy:.0f} case-seconds, "
      f"{busy / max(last - first, 1e-9):.1f} at once on average")
