#!/usr/bin/env bash
# CPU time a doppel binary spends per request (perf stat's task-clock over N
# requests sent one after another on one connection, after 2,000 to warm
# up): for comparing two builds where throughput on a shared two-core
# machine is too noisy. Hardware counters are not available in the
# development VM, and valgrind cannot run the binaries.
#
#   bash Benchmarks/cpu-per-request.sh BINARY PORT fixed|free|generate      (N=20000 by default)
#
# `fixed` is GET /fixed of Benchmarks/fixed.yaml; `free` is GET
# /api/v1/free-stories?language=en and `generate` POST
# /api/v1/stories/generate (in a premium session) of contracts/tales.yaml.
# Run builds alternately, several times: single runs vary by a few percent.
set -euo pipefail
BIN=$1; PORT=$2; N=${N:-20000}; KIND=${3:-fixed}
cd "$(dirname "$0")/.."
command -v perf >/dev/null || { echo "cpu-per-request: needs perf (Debian's linux-perf)" >&2; exit 1; }
W=$(mktemp -d)
if [ "$KIND" = fixed ]; then CONTRACT=Benchmarks/fixed.yaml; else CONTRACT=contracts/tales.yaml; fi
"$BIN" serve "$CONTRACT" --port $PORT --log-format none > $W/log 2>&1 &
P=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/__doppel/health" >/dev/null && break; sleep 0.1; done
TOKEN='Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIzZjJiOGMxZS03ZDRhLTRlNTktOWIxYy0yYTZmMGU4ZDRjNzEiLCJyb2xlIjoiYXV0aGVudGljYXRlZCJ9.c2lnbmF0dXJl'
if [ "$KIND" = fixed ]; then
  REQ=$'GET /fixed HTTP/1.1\r\nHost: x\r\n\r\n'
elif [ "$KIND" = free ]; then
  REQ=$'GET /api/v1/free-stories?language=en HTTP/1.1\r\nHost: x\r\n\r\n'
else
  B="http://127.0.0.1:$PORT/api/v1"
  curl -s -X POST -H "Authorization: $TOKEN" -H "Doppel-Session: p" "$B/subscription/purchase?plan_tier=premium&billing_cycle=monthly&payment_method=card" >/dev/null
  C=$(curl -s -H "Authorization: $TOKEN" -H "Doppel-Session: p" -H 'Content-Type: application/json' -d '{"name":"B","age_category":"5-7","gender":"male","interests":["x"]}' "$B/children" | sed -E 's/.*"id":"([^"]+)".*/\1/')
  BODY="{\"language\":\"ru\",\"child_id\":\"$C\",\"story_type\":\"child\"}"
  REQ=$'POST /api/v1/stories/generate HTTP/1.1\r\nHost: x\r\nAuthorization: '"$TOKEN"$'\r\nDoppel-Session: p\r\nContent-Type: application/json\r\nContent-Length: '"${#BODY}"$'\r\n\r\n'"$BODY"
fi
client() {
python3 - "$PORT" "$1" <<PY
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
req = """$REQ""".replace("\n", "\r\n").replace("\r\r\n", "\r\n").encode()
s = socket.create_connection(("127.0.0.1", port))
buf = b""; seen = 0
for i in range(n):
    s.sendall(req)
    while True:
        k = buf.find(b"HTTP/1.1 200", 0)
        if k >= 0:
            buf = buf[k+12:]; break
        buf += s.recv(65536)
PY
}
client 2000
perf stat -x, -e task-clock -p $P -o $W/perf -- sleep 30 &
PS=$!
sleep 0.3
client "$N"
kill -INT $PS 2>/dev/null || true; wait $PS 2>/dev/null || true
kill $P; wait $P 2>/dev/null || true
ins=$(awk -F, '/task-clock/ {printf "%.0f", $1 * 1000000}' $W/perf)  # %d overflows past 2^31 in mawk
echo "$(basename $BIN) $KIND: $((ins / N)) ns of CPU per request"
rm -rf $W
