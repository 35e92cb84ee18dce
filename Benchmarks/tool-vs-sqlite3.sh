#!/usr/bin/env bash
# Times the `requestset` tool beside the sqlite3 shell on the same 1,000,000 generated
# orders: import (CSV and JSON Lines), export (dump/query as CSV and JSON), info and
# verify. Each comparison runs the two commands in turn RUNS times (default 3), with
# /usr/bin/time -f "%e %M" (seconds, peak resident KB), and prints each one's median and
# the median of the pair-by-pair ratios (tool / sqlite3), as one Markdown table.
#
#   Benchmarks/tool-vs-sqlite3.sh [ROWS] [RUNS]
#
# Builds the tool in release mode first (swift build --package-path Tools -c release).
# Needs sqlite3, python3 and GNU time. Work files go to ${WORK:-/tmp/requestset-bench}.
set -euo pipefail
ROWS=${1:-1000000}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/requestset-bench}
TOOL="$ROOT/Tools/.build/release/requestset"
mkdir -p "$WORK"
cd "$WORK"

if [[ -z "${SKIP_BUILD:-}" ]]; then
  nice -n 5 swift build --package-path "$ROOT/Tools" -c release >&2
fi

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

CSV=orders-$ROWS.csv
JSONL=orders-$ROWS.jsonl
clean_tool='rm -f orders.rslog orders.rslog.*'
clean_db='rm -f orders.db'

echo "| $ROWS rows, median of $RUNS pairs | requestset | peak | sqlite3 | peak | ratio (median of pairs) |"
echo "|---|---|---|---|---|---|"
compare "import CSV" "$clean_tool" "$clean_db" -- "$TOOL" import orders.rslog --from "$CSV" \
  -- sqlite3 orders.db ".mode csv" ".import $CSV orders"
compare "import JSON Lines (vs CSV)" "$clean_tool" "$clean_db" -- "$TOOL" import orders.rslog --from "$JSONL" \
  -- sqlite3 orders.db ".mode csv" ".import $CSV orders"

# Exports read the log and the database the CSV import made.
eval "$clean_tool"; "$TOOL" import orders.rslog --from "$CSV" > /dev/null
eval "$clean_db"; sqlite3 orders.db ".mode csv" ".import $CSV orders"
compare "dump --format csv" : : -- "$TOOL" dump orders.rslog --format csv \
  -- sqlite3 orders.db ".headers on" ".mode csv" "select * from orders"
compare "dump --format json" : : -- "$TOOL" dump orders.rslog --format json \
  -- sqlite3 orders.db ".mode json" "select * from orders"
compare "dump (JSON Lines) vs json" : : -- "$TOOL" dump orders.rslog \
  -- sqlite3 orders.db ".mode json" "select * from orders"
compare "query filter+sort, csv" : : -- "$TOOL" query orders.rslog "status == 'paid'" --sort total:desc --format csv \
  -- sqlite3 orders.db ".headers on" ".mode csv" "select * from orders where status = 'paid' order by cast(total as real) desc"
# info and verify have no sqlite3 counterpart; count(*) and integrity_check are references.
compare "info (vs count(*))" : : -- "$TOOL" info orders.rslog -- sqlite3 orders.db "select count(*) from orders"
compare "verify (vs integrity_check)" : : -- "$TOOL" verify orders.rslog -- sqlite3 orders.db "pragma integrity_check"
