#!/usr/bin/env bash
# Doppel benchmarks against the limit: nginx serving the same bytes, on the
# same machine, in the same run. Every throughput number is reported as a
# ratio to nginx, with p99 latency; start-up to the first 200 is compared
# with nginx's; resident memory is read after the load. The older baseline,
# GET /__doppel/health, is kept as a second column.
#
#   bash Benchmarks/run.sh            # 10 s per load test
#   DURATION=3s bash Benchmarks/run.sh
#
# Load goes to 127.0.0.1 only: two wrk threads, 32 connections, bounded by
# DURATION. Needs wrk, hyperfine and nginx (installed with apt-get when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
PORT=${PORT:-18080}          # doppel serving contracts/tales.yaml
FIXED_PORT=$((PORT + 1))     # doppel serving Benchmarks/fixed.yaml
NGINX_PORT=$((PORT + 2))     # nginx serving the same bytes
CONNECTIONS=${CONNECTIONS:-32}

missing=()
for tool in wrk hyperfine nginx; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
    apt-get update -qq && apt-get install -y -qq "${missing[@]/nginx/nginx-light}" >/dev/null
fi

source Benchmarks/common.sh

"$DOPPEL" serve contracts/tales.yaml --port "$PORT" --log-format none >/dev/null & PIDS+=($!)
TALES_PID=$!
"$DOPPEL" serve Benchmarks/fixed.yaml --port "$FIXED_PORT" --log-format none >/dev/null & PIDS+=($!)
BASE="http://127.0.0.1:$PORT"
FIXED="http://127.0.0.1:$FIXED_PORT"
wait_for "$BASE/__doppel/health"
wait_for "$FIXED/fixed"

# nginx serves, at the very path of every Doppel request measured, the
# bytes Doppel answers it with, so both servers get the same requests from
# the same wrk command line and script: `error_page 405 =200` makes nginx
# answer a POST to a static file with the file, as it answers the GET.
mkdir -p "$WORK/www"
nginx_serving "$NGINX_PORT" application/json

TOKEN='Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIzZjJiOGMxZS03ZDRhLTRlNTktOWIxYy0yYTZmMGU4ZDRjNzEiLCJyb2xlIjoiYXV0aGVudGljYXRlZCJ9.c2lnbmF0dXJl'
# Sessions for the stateful endpoint: premium, so every generate succeeds
# and the 200 path (validation, let, a 15-field template, effects) is timed.
session() {  # session ID -> a child id in a premium session
    curl -s -X POST -H "Authorization: $TOKEN" -H "Doppel-Session: $1" \
        "$BASE/api/v1/subscription/purchase?plan_tier=premium&billing_cycle=monthly&payment_method=card" >/dev/null
    curl -s -H "Authorization: $TOKEN" -H "Doppel-Session: $1" -H 'Content-Type: application/json' \
        -d '{"name":"Bench","age_category":"5-7","gender":"male","interests":["x"]}' "$BASE/api/v1/children" \
        | sed -E 's/.*"id":"([^"]+)".*/\1/'
}
# Two wrk scripts with the same POST: one session (a static request, built
# once by wrk), and 32 sessions (one prepared request per session, taken in
# turn). Both load nginx and Doppel alike.
CHILDREN=()
for i in $(seq 0 31); do CHILDREN+=("$(session "bench-$i")"); done
body() { echo "{\"language\":\"ru\",\"child_id\":\"$1\",\"story_type\":\"child\"}"; }
cat > "$WORK/generate.lua" <<LUA
wrk.method = "POST"
wrk.headers["Authorization"] = "$TOKEN"
wrk.headers["Doppel-Session"] = "bench-0"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$(body "${CHILDREN[0]}")'
LUA
{
    echo 'local sessions = {'
    for i in $(seq 0 31); do echo "  {\"bench-$i\", '$(body "${CHILDREN[$i]}")'},"; done
    echo '}'
    cat <<LUA
local requests, counter = {}, 0
init = function(args)
    for i, s in ipairs(sessions) do
        requests[i] = wrk.format("POST", nil, { ["Authorization"] = "$TOKEN", ["Doppel-Session"] = s[1], ["Content-Type"] = "application/json" }, s[2])
    end
end
request = function()
    counter = counter % #requests + 1
    return requests[counter]
end
LUA
} > "$WORK/generate-spread.lua"

mkdir -p "$WORK/www/api/v1/stories"
curl -s "$FIXED/fixed" > "$WORK/www/fixed"
curl -s "$BASE/api/v1/free-stories?language=en" > "$WORK/www/api/v1/free-stories"
curl -s -H "Authorization: $TOKEN" -H 'Doppel-Session: bench-0' -H 'Content-Type: application/json' \
    -d "$(body "${CHILDREN[0]}")" "$BASE/api/v1/stories/generate" > "$WORK/www/api/v1/stories/generate"
nginx -c "$WORK/nginx.conf"
NGINX="http://127.0.0.1:$NGINX_PORT"
wait_for "$NGINX/fixed"
for path in /fixed "/api/v1/free-stories?language=en" /api/v1/stories/generate; do
    # The comparison only means something if nginx answers the same request 200 with the same bytes.
    if [ "$path" = /api/v1/stories/generate ]; then post=(-H "Authorization: $TOKEN" -H 'Content-Type: application/json' -d "$(body "${CHILDREN[0]}")"); else post=(); fi
    status=$(curl -s "${post[@]}" -o "$WORK/check" -w '%{http_code}' "$NGINX$path")
    if [ "$status" != 200 ] || ! cmp -s "$WORK/check" "$WORK/www${path%%\?*}"; then
        echo "nginx does not answer $path as Doppel does (status $status)" >&2; exit 1
    fi
done

load() {  # load URL [wrk args...] -> "requests/s p99"
    local url=$1; shift
    wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency "$@" "$url" \
        | awk '/Requests\/sec/ { rps = $2 } / 99%/ { p99 = $2 } END { print rps, p99 }'
}

echo "Throughput ($DURATION each, $CONNECTIONS connections, 2 wrk threads), as ratios to nginx serving the same bytes"
printf '  %-48s %10s %9s %8s %8s %9s\n' request "req/s" p99 "/nginx" "/health" "nginx p99"
read -r health _ <<<"$(load "$BASE/__doppel/health")"
row() {  # row LABEL DOPPEL_BASE PATH [wrk args...]: the same request to Doppel and to nginx
    local label=$1 base=$2 path=$3; shift 3
    read -r rps p99 <<<"$(load "$base$path" "$@")"
    read -r nrps np99 <<<"$(load "$NGINX$path" "$@")"
    printf '  %-48s %10s %9s %8.2f %8.2f %9s\n' "$label" "$rps" "$p99" "$(echo "$rps / $nrps" | bc -l)" "$(echo "$rps / $health" | bc -l)" "$np99"
}
# The same request while a dashboard follows all traffic: one reader of
# GET /__doppel/events (every answer's event, request and response included),
# read as fast as it comes. The load is run twice without the reader and
# twice with it, alternately, so drift in the machine's load falls on both;
# the last column is the ratio of the two means.
followed_row() {  # followed_row DOPPEL_BASE PATH [wrk args...]
    local base=$1 path=$2; shift 2
    local closed=0 followed=0 rps p99 reader
    for _ in 1 2; do
        read -r rps _ <<<"$(load "$base$path" "$@")"
        closed=$(echo "$closed + $rps" | bc -l)
        curl -sN "$base/__doppel/events" > /dev/null & reader=$!
        sleep 0.5
        read -r rps p99 <<<"$(load "$base$path" "$@")"
        kill -0 "$reader" 2>/dev/null || { echo "the event stream's reader was dropped" >&2; exit 1; }
        kill "$reader" 2>/dev/null || true
        wait "$reader" 2>/dev/null || true
        followed=$(echo "$followed + $rps" | bc -l)
    done
    printf '  %-48s %10.2f %9s %8s %8s %9s  %.2f of %.2f without (2 runs each, alternating)\n' "  ...with a dashboard following all traffic" \
        "$(echo "$followed / 2" | bc -l)" "$p99" "" "" "" "$(echo "$followed / $closed" | bc -l)" "$(echo "$closed / 2" | bc -l)"
}
row "GET /fixed (constant body)" "$FIXED" /fixed
followed_row "$FIXED" /fixed
# The tales server's resident memory is sampled every 0.2 s while it is loaded (the peak), and read again after.
( peak=0; while kill -0 "$TALES_PID" 2>/dev/null; do
    rss=$(awk '/VmRSS/ { print $2 }' /proc/$TALES_PID/status 2>/dev/null || echo 0)
    [ "${rss:-0}" -gt "$peak" ] && { peak=$rss; echo "$peak" > "$WORK/peak-rss"; }
    sleep 0.2
  done ) & SAMPLER=$!; PIDS+=($SAMPLER)
row "GET /api/v1/free-stories (filter over data)" "$BASE" "/api/v1/free-stories?language=en"
row "POST /api/v1/stories/generate, one session" "$BASE" /api/v1/stories/generate -s "$WORK/generate.lua"
row "POST /api/v1/stories/generate, 32 sessions" "$BASE" /api/v1/stories/generate -s "$WORK/generate-spread.lua"
followed_row "$BASE" /api/v1/stories/generate -s "$WORK/generate-spread.lua"
kill "$SAMPLER" 2>/dev/null || true
printf '  %-48s %10s\n' "GET /__doppel/health (the older baseline)" "$health"
echo "Resident memory of the tales server: $(awk '{ printf "%.1f MB", $1 / 1024 }' "$WORK/peak-rss") at most during the load, $(awk '/VmRSS/ { printf "%.1f MB", $2 / 1024 }' /proc/$TALES_PID/status) after it"

echo "Start-up to the first 200 (median of 15)"
python3 - "$DOPPEL" "$WORK" "$PORT" <<'PY'
import os, socket, statistics, subprocess, sys, time
doppel, work, port = sys.argv[1], sys.argv[2], int(sys.argv[3]) + 3

def first_200(command, path):
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - started < 10:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
                    if s.recv(12).startswith(b"HTTP/1.1 200"):
                        return time.perf_counter() - started
            except OSError:
                time.sleep(0.0005)
        log = os.path.join(work, "startup.err")
        raise SystemExit(f"{command[0]} never answered" + (": " + open(log).read()[-500:] if os.path.exists(log) else ""))
    finally:
        process.terminate()
        process.wait()

conf = os.path.join(work, "startup.conf")
with open(conf, "w") as f:
    f.write(f"worker_processes 1; pid {work}/startup.pid; error_log {work}/startup.err; daemon off;\n"
            f"events {{}} http {{ access_log off; server {{ listen 127.0.0.1:{port}; root {work}/www; }} }}\n")
nginx = statistics.median(first_200(["nginx", "-c", conf], "/fixed") for _ in range(15))
tales = statistics.median(first_200([doppel, "serve", "contracts/tales.yaml", "--port", str(port), "--log-format", "none"], "/api/v1/free-stories")
                          for _ in range(15))
print(f"  {'nginx':<48} {nginx * 1000:8.1f} ms  1.00")
print(f"  {'doppel serve contracts/tales.yaml':<48} {tales * 1000:8.1f} ms  {tales / nginx:.2f}")
PY
