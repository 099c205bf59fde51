#!/usr/bin/env bash
# Scale benchmark: what a document of 1,000, 10,000 and 90,000 operations
# costs each command, to show that the cost grows in line with the size.
#  - `doppel lint`, `doppel routes` and `doppel import` of the document;
#  - `doppel serve` from start to the first 200 of its last operation;
#  - `doppel export` of the imported contract.
# Each time is the median of RUNS runs (3 by default); the per-operation
# column divides by the 1,000-operation time, so a row near 1.0 is linear.
# Usage: bash Benchmarks/scale.sh   (SIZES="1000 10000 90000" RUNS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-"1000 10000 90000"}
RUNS=${RUNS:-3}
PORT=${PORT:-18951}
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill $server 2>/dev/null; rm -rf "$work"' EXIT
swift build -c release --product doppel >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
doppel=$PWD/.build/release/doppel

median() { python3 -c 'import statistics,sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.3f}")' "$@"; }
timed() {  # timed CMD...: seconds of one run
  local start end
  start=$(date +%s.%N); "$@" >/dev/null 2>&1; end=$(date +%s.%N)
  python3 -c "print($end - $start)"
}
serve_time() {  # serve_time FILE LASTPATH: seconds to the first 200 of LASTPATH
  local start end
  start=$(date +%s.%N)
  "$doppel" serve "$1" --host 127.0.0.1 --port "$PORT" --log-format none >/dev/null 2>&1 &
  server=$!
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT$2")" = 200 ]; do
    kill -0 "$server" 2>/dev/null || { echo "doppel serve $1 stopped" >&2; exit 1; }
    sleep 0.02
  done
  end=$(date +%s.%N)
  kill "$server"; wait "$server" 2>/dev/null || true; server=
  python3 -c "print($end - $start)"
}

declare -A base
printf '| operations | command | seconds (median of %s) | per operation / at 1,000 |\n| --- | --- | --- | --- |\n' "$RUNS"
for size in $SIZES; do
  # Lean operations, ten YAML nodes each, so that 90,000 fit in the
  # 1,000,000 nodes and 16 MiB a document may have (docs/limits.md).
  python3 - "$size" >"$work/api-$size.yaml" <<'PY'
import sys
out = sys.stdout
out.write('openapi: 3.1.0\ninfo: { title: Scale, version: "1" }\nservers: [{ url: /api/v1 }]\npaths:\n')
for i in range(int(sys.argv[1])):
    out.write(f'  /things{i}: {{ get: {{ responses: {{ "200": {{ description: ok }} }} }} }}\n')
PY
  last="/api/v1/things$((size - 1))"
  for command in lint routes import serve export; do
    samples=()
    for _ in $(seq "$RUNS"); do
      case $command in
        lint) samples+=("$(timed "$doppel" lint "$work/api-$size.yaml")") ;;
        routes) samples+=("$(timed "$doppel" routes "$work/api-$size.yaml")") ;;
        import) rm -f "$work/contract-$size.yaml"; samples+=("$(timed "$doppel" import "$work/api-$size.yaml" -o "$work/contract-$size.yaml")") ;;
        serve) samples+=("$(serve_time "$work/api-$size.yaml" "$last")") ;;
        export) samples+=("$(timed "$doppel" export "$work/contract-$size.yaml" -o "$work/export-$size.yaml")") ;;
      esac
    done
    seconds=$(median "${samples[@]}")
    [ -z "${base[$command]:-}" ] && base[$command]=$(python3 -c "print($seconds / $size)")
    ratio=$(python3 -c "print(f'{($seconds / $size) / ${base[$command]}:.2f}')")
    printf '| %s | %s | %s | %s |\n' "$size" "$command" "$seconds" "$ratio"
  done
done
