#!/usr/bin/env bash
# Doppel benchmarks: throughput and start-up, each reported as a ratio
# against a baseline measured in the same run on the same machine.
#
#   bash Benchmarks/run.sh            # 10 s per load test
#   DURATION=3s bash Benchmarks/run.sh
#
# Throughput baseline: GET /__doppel/health, the cheapest request the server
# answers (HTTP parsing, one small JSON body, no contract work). Each contract
# endpoint's requests/second is divided by it, so the numbers say how much the
# contract pipeline costs, independent of the machine's speed.
#
# Start-up baseline: `doppel --version` (process start, no contract). The
# ratio is the cost of loading and checking the contract on top.
#
# Load goes to 127.0.0.1 only, two wrk threads, 32 connections, bounded by
# DURATION. Needs wrk and hyperfine (installed with apt-get when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
PORT=${PORT:-18080}
CONNECTIONS=${CONNECTIONS:-32}

for tool in wrk hyperfine; do
    if ! command -v "$tool" >/dev/null; then
        apt-get update -qq && apt-get install -y -qq "$tool" >/dev/null
    fi
done

swift build -c release --product doppel >/dev/null
DOPPEL=.build/release/doppel

"$DOPPEL" serve contracts/tales.yaml --port "$PORT" --log-format none >/dev/null &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/__doppel/health" && break
    sleep 0.05
done

BASE="http://127.0.0.1:$PORT"
LUA=$(mktemp)
trap 'kill $SERVER 2>/dev/null || true; rm -f "$LUA"' EXIT

rps() {  # rps URL [wrk args...] -> requests/second
    local url=$1; shift
    wrk -t2 -c"$CONNECTIONS" -d"$DURATION" "$@" "$url" | awk '/Requests\/sec/ { print $2 }'
}

# A child for the stateful endpoint, in its own session; premium so every
# generate succeeds and the 200 path (template rendering, effects) is timed.
curl -s -X POST -H 'Authorization: Bearer bench' -H 'Doppel-Session: bench' \
    "$BASE/api/v1/subscription/purchase?plan_tier=premium&billing_cycle=monthly&payment_method=card" >/dev/null
CHILD=$(curl -s -H 'Authorization: Bearer bench' -H 'Doppel-Session: bench' -H 'Content-Type: application/json' \
    -d '{"name":"Bench","age_category":"5-7","gender":"male","interests":["x"]}' "$BASE/api/v1/children" \
    | sed -E 's/.*"id":"([^"]+)".*/\1/')
cat > "$LUA" <<LUA
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer bench"
wrk.headers["Doppel-Session"] = "bench"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"language":"ru","child_id":"$CHILD"}'
LUA

echo "Throughput ($DURATION each, $CONNECTIONS connections, 2 threads)"
baseline=$(rps "$BASE/__doppel/health")
printf '  %-46s %10s req/s  1.00 (baseline)\n' "GET /__doppel/health" "$baseline"
report() {  # report LABEL RPS
    printf '  %-46s %10s req/s  %.2f\n' "$1" "$2" "$(echo "$2 / $baseline" | bc -l)"
}
report "GET /api/v1/free-stories (filter, public)" "$(rps "$BASE/api/v1/free-stories?language=en")"
report "GET /api/v1/subscription/plans (template)" "$(rps "$BASE/api/v1/subscription/plans" -H 'Authorization: Bearer bench')"
report "POST /api/v1/stories/generate (state, effects)" "$(rps "$BASE/api/v1/stories/generate" -s "$LUA")"
report "GET /api/v1/nowhere (404 with near misses)" "$(rps "$BASE/api/v1/nowhere")"

echo "Start-up (hyperfine)"
hyperfine --warmup 3 --runs 30 --export-json /tmp/doppel-startup.json \
    "$DOPPEL --version" "$DOPPEL routes contracts/tales.yaml" >/dev/null
python3 - <<'PY'
import json
runs = json.load(open("/tmp/doppel-startup.json"))["results"]
base = runs[0]["mean"]
for r in runs:
    label = r["command"].replace(".build/release/", "")
    print(f"  {label:<46} {r['mean'] * 1000:8.1f} ms  {r['mean'] / base:.2f}" + (" (baseline)" if r is runs[0] else ""))
PY
