#!/usr/bin/env bash
# Times the `requestset` tool beside the sqlite3 shell on the same 1,000,000 generated
# orders: import (CSV and JSON Lines), export (dump/query as CSV and JSON), info and
# verify, each the median of RUNS runs (default 3), with peak resident memory from
# /usr/bin/time -f %M. Prints one table of medians and ratios (tool / sqlite3).
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

# median of RUNS runs of a command: prints "SECONDS PEAK_KB"; PREP runs before each run.
measure() {
  local prep="$1"; shift
  local times=() mems=()
  for _ in $(seq "$RUNS"); do
    eval "$prep"
    /usr/bin/time -f "%e %M" -o time.out "$@" > /dev/null 2> err.out || { cat err.out >&2; exit 1; }
    read -r t m < time.out
    times+=("$t"); mems+=("$m")
  done
  local mt mm
  mt=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$(( (RUNS + 1) / 2 ))p")
  mm=$(printf '%s\n' "${mems[@]}" | sort -g | sed -n "$(( (RUNS + 1) / 2 ))p")
  echo "$mt $mm"
}

row() {  # name, tool "s kb", sqlite "s kb"
  read -r ts tm <<< "$2"; read -r ss sm <<< "$3"
  printf "| %-28s | %8.2f s | %7.1f MB | %8.2f s | %7.1f MB | %5.2f× |\n" "$1" "$ts" "$(echo "$tm/1024" | bc -l)" \
    "$ss" "$(echo "$sm/1024" | bc -l)" "$(echo "$ts/$ss" | bc -l)"
}

CSV=orders-$ROWS.csv
JSONL=orders-$ROWS.jsonl
clean_tool='rm -f orders.rslog orders.rslog.*'
clean_db='rm -f orders.db'

echo "| $ROWS rows, median of $RUNS | requestset | peak | sqlite3 | peak | ratio |"
echo "|---|---|---|---|---|---|"
sq_import=$(measure "$clean_db" sqlite3 orders.db ".mode csv" ".import $CSV orders")
row "import CSV" "$(measure "$clean_tool" "$TOOL" import orders.rslog --from "$CSV")" "$sq_import"
row "import JSON Lines (vs CSV)" "$(measure "$clean_tool" "$TOOL" import orders.rslog --from "$JSONL")" "$sq_import"

# Exports read the log and the database the CSV import made.
eval "$clean_tool"; "$TOOL" import orders.rslog --from "$CSV" > /dev/null
eval "$clean_db"; sqlite3 orders.db ".mode csv" ".import $CSV orders"
row "dump --format csv" "$(measure : "$TOOL" dump orders.rslog --format csv)" \
  "$(measure : sqlite3 orders.db ".headers on" ".mode csv" "select * from orders")"
row "dump --format json" "$(measure : "$TOOL" dump orders.rslog --format json)" \
  "$(measure : sqlite3 orders.db ".mode json" "select * from orders")"
row "dump (JSON Lines) vs json" "$(measure : "$TOOL" dump orders.rslog)" \
  "$(measure : sqlite3 orders.db ".mode json" "select * from orders")"
row "query filter+sort, csv" \
  "$(measure : "$TOOL" query orders.rslog "status == 'paid'" --sort total:desc --format csv)" \
  "$(measure : sqlite3 orders.db ".headers on" ".mode csv" "select * from orders where status = 'paid' order by cast(total as real) desc")"
row "info (vs count(*))" "$(measure : "$TOOL" info orders.rslog)" "$(measure : sqlite3 orders.db "select count(*) from orders")"
row "verify (vs integrity_check)" "$(measure : "$TOOL" verify orders.rslog)" \
  "$(measure : sqlite3 orders.db "pragma integrity_check")"
