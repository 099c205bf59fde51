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
#
# STORE=1 serves with `--state-store` on the throwaway PostgreSQL of
# .ci/postgres.sh (a namespace of its own per run) and reports the CPU time
# of doppel and of PostgreSQL's processes per request (user and system time
# from /proc, in clock ticks: use N of a few thousand). With `generate`,
# each request is one session's read and write, none contending.
set -euo pipefail
BIN=$1; PORT=$2; N=${N:-20000}; KIND=${3:-fixed}
cd "$(dirname "$0")/.."
# (STORE=1 reads /proc and needs no perf.)
[ -n "${STORE:-}" ] || command -v perf >/dev/null || { echo "cpu-per-request: needs perf (Debian's linux-perf)" >&2; exit 1; }
W=$(mktemp -d)
if [ "$KIND" = fixed ]; then CONTRACT=Benchmarks/fixed.yaml; else CONTRACT=contracts/tales.yaml; fi
STORE_ARGS=()
if [ -n "${STORE:-}" ]; then
  bash .ci/postgres.sh setup >/dev/null
  STORE_ARGS=(--state-store "$(bash .ci/postgres.sh url)" --state-namespace "cpu-$$-$RANDOM")
fi
"$BIN" serve "$CONTRACT" --port $PORT --log-format none "${STORE_ARGS[@]}" > $W/log 2>&1 &
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
if [ -n "${STORE:-}" ]; then
  ticks() { for pid in "$@"; do awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null; done | awk '{ s += $1 } END { print s + 0 }'; }
  doppel_before=$(ticks $P); postgres_before=$(ticks $(pgrep -u postgres))
  client "$N"
  doppel=$(( ($(ticks $P) - doppel_before) * 1000000000 / $(getconf CLK_TCK) / N ))
  postgres=$(( ($(ticks $(pgrep -u postgres)) - postgres_before) * 1000000000 / $(getconf CLK_TCK) / N ))
  kill $P; wait $P 2>/dev/null || true
  echo "$(basename $BIN) $KIND with --state-store: $doppel ns of doppel's CPU and $postgres ns of PostgreSQL's per request"
  rm -rf $W
  exit 0
fi
perf stat -x, -e task-clock -p $P -o $W/perf -- sleep 30 &
PS=$!
sleep 0.3
client "$N"
kill -INT $PS 2>/dev/null || true; wait $PS 2>/dev/null || true
kill $P; wait $P 2>/dev/null || true
ins=$(awk -F, '/task-clock/ {printf "%.0f", $1 * 1000000}' $W/perf)  # %d overflows past 2^31 in mawk
echo "$(basename $BIN) $KIND: $((ins / N)) ns of CPU per request"
rm -rf $W
