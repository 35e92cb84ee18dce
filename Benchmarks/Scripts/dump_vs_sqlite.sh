#!/usr/bin/env bash
# `requestset dump` of a log against `sqlite3 -json` over the same records in a SQLite file.
#
#   Benchmarks/Scripts/dump_vs_sqlite.sh [RECORDS] [RUNS]     (defaults: 1000000 records, 5 runs)
#
# Builds the tool in release, writes RECORDS flat records (id, name, species, age, weight,
# nickname (absent in a third of them), city) as JSON Lines, imports them into a log with
# `requestset import` and into a SQLite table with Python's sqlite3 module, then times each
# full dump to /dev/null RUNS times, alternating, and prints the medians and their ratio.
# Work files go to a temporary directory, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-1000000}"
RUNS="${2:-5}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

swift build -c release --package-path Tools --product requestset > "$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; exit 1; }
TOOL="$(swift build -c release --package-path Tools --show-bin-path)/requestset"

python3 - "$N" "$WORK" <<'PY'
import json, random, sqlite3, sys
n, work = int(sys.argv[1]), sys.argv[2]
rng = random.Random(11)
names = ["Micky", "Daisy", "Rex", "Bella", "alice", "Zed", "Bob", "Émile", "Max"]
species = ["Cow", "Dog", "Cat", "Mouse", "Horse"]
cities = ["Oslo", "Bergen", "Burbank", "Paris"]
db = sqlite3.connect(f"{work}/big.sqlite")
db.execute("CREATE TABLE animals (id INTEGER PRIMARY KEY, name TEXT, species TEXT, age INTEGER, weight REAL, nickname TEXT, city TEXT)")
rows = []
with open(f"{work}/big.jsonl", "w") as out:
    for i in range(1, n + 1):
        r = {"id": i, "name": rng.choice(names), "species": rng.choice(species), "age": rng.randrange(21),
             "weight": rng.randrange(1, 4000) / 4 + 0.5, "city": rng.choice(cities)}
        if i % 3:
            r["nickname"] = rng.choice(names).lower()
        out.write(json.dumps(r) + "\n")
        rows.append((i, r["name"], r["species"], r["age"], r["weight"], r.get("nickname"), r["city"]))
db.executemany("INSERT INTO animals VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
db.commit()
db.close()
PY
"$TOOL" import "$WORK/big.rslog" --from "$WORK/big.jsonl" > /dev/null

# Both outputs hold the same records (same count).
test "$("$TOOL" dump "$WORK/big.rslog" | wc -l)" -eq "$N"
test "$(sqlite3 -json "$WORK/big.sqlite" 'SELECT * FROM animals' | grep -c '"id"')" -eq "$N"

python3 - "$TOOL" "$WORK" "$RUNS" "$N" <<'PY'
import os, statistics, subprocess, sys, time
tool, work, runs, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
commands = {
    "requestset dump": [tool, "dump", f"{work}/big.rslog"],
    "sqlite3 -json": ["sqlite3", "-json", f"{work}/big.sqlite", "SELECT * FROM animals"],
}
# Wall-clock time, and CPU time (user + system) of the child, which a busy machine
# disturbs less.
wall = {name: [] for name in commands}
cpu = {name: [] for name in commands}
for _ in range(runs):
    for name, cmd in commands.items():
        start = time.perf_counter()
        with open(os.devnull, "wb") as null:
            p = subprocess.Popen(cmd, stdout=null)
            _, status, usage = os.wait4(p.pid, 0)
        assert status == 0, f"{name} failed"
        wall[name].append(time.perf_counter() - start)
        cpu[name].append(usage.ru_utime + usage.ru_stime)
for name in commands:
    print(f"{name:16} wall median {statistics.median(wall[name]):.3f} s, CPU median {statistics.median(cpu[name]):.3f} s "
          f"over {runs} runs (wall {', '.join(f'{x:.2f}' for x in wall[name])})")
for label, t in (("wall-clock", wall), ("CPU", cpu)):
    ratio = statistics.median(t["requestset dump"]) / statistics.median(t["sqlite3 -json"])
    print(f"{n} records: requestset dump takes {ratio:.2f}x the {label} time of sqlite3 -json")
PY
