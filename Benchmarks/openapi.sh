#!/usr/bin/env bash
# OpenAPI benchmark: a generated document of 1,000 operations.
#  - `doppel routes` on it against `doppel routes contracts/tales.yaml` (hyperfine);
#  - requests to its first and its last operation (wrk, loopback), as req/s;
#  - the corpus's vendor-shaped document: first answer after start, and RSS.
# Usage: bash Benchmarks/openapi.sh   (DURATION=2s a wrk run by default, six runs)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-2s}
PORT=${PORT:-18931}
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
server=
swift build -c release --product doppel >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
doppel=.build/release/doppel
python3 Benchmarks/openapi-document.py 1000 >"$work/api.yaml"

hyperfine -N --warmup 3 --runs 20 --export-json "$work/routes.json" \
  "$doppel routes contracts/tales.yaml" "$doppel routes $work/api.yaml" >/dev/null
python3 - "$work/routes.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
tales, api = (r["mean"] * 1000 for r in results)
print(f"doppel routes: tales {tales:.1f} ms, 1,000 operations {api:.1f} ms ({api / tales:.2f}x; target <= 3x)")
PY

"$doppel" serve "$work/api.yaml" --host 127.0.0.1 --port "$PORT" --log-format none >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/__doppel/health" && break; sleep 0.1; done
rate() { wrk -t2 -c32 -d"$DURATION" -H "Authorization: Bearer t" "$1" | awk '/Requests\/sec/ {print $2}'; }
# First and last in turn, three times each: the machine's speed drifts
# between runs, and the medians compare like with like.
firsts=() lasts=()
for _ in 1 2 3; do
  firsts+=("$(rate "http://127.0.0.1:$PORT/api/v1/things0/1")")
  lasts+=("$(rate "http://127.0.0.1:$PORT/api/v1/things499/1")")
done
python3 - "${firsts[*]}" "${lasts[*]}" <<'PY'
import statistics, sys
f, l = (statistics.median(float(x) for x in arg.split()) for arg in sys.argv[1:3])
print(f"routing: first operation {f:.0f} req/s, last {l:.0f} req/s, medians of 3 (last/first {l / f:.2f}; target >= 0.90)")
PY

# The corpus's vendor-shaped document (2.9 MB, 1,100 operations): its first
# answer after start, and its memory while OpenAPIKit's check runs beside it.
python3 Benchmarks/vendor-document.py "$doppel" --port "$((PORT + 1))"

# An unmatched request on that document: Doppel scores every endpoint for
# the near misses it names; its rate against a matched request's.
"$doppel" serve Tests/DoppelServerTests/Fixtures/openapi/corpus/large-vendor.yaml --host 127.0.0.1 --port "$((PORT + 2))" --log-format none >"$work/vendor.log" 2>&1 &
vendor=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$((PORT + 2))/__doppel/health" && break; sleep 0.1; done
matched=() unmatched=()
for _ in 1 2 3; do
  matched+=("$(rate "http://127.0.0.1:$((PORT + 2))/v1/resource5s")")
  unmatched+=("$(rate "http://127.0.0.1:$((PORT + 2))/v1/resource5s/x/nothing")")
done
kill "$vendor"
python3 - "${matched[*]}" "${unmatched[*]}" <<'PY'
import statistics, sys
m, u = (statistics.median(float(x) for x in arg.split()) for arg in sys.argv[1:3])
print(f"vendor document: matched {m:.0f} req/s, unmatched (404 with near misses) {u:.0f} req/s, medians of 3 (unmatched/matched {u / m:.2f})")
PY
