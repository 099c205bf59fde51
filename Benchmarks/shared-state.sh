#!/usr/bin/env bash
# Replicas sharing state on PostgreSQL (`doppel serve --state-store`) behind
# a load balancer, against one in-memory server behind the same balancer,
# in the same run: nginx (proxy, upstream keep-alive) in front of
#   A: one `doppel serve` with its sessions in memory, and
#   B: two `doppel serve --state-store` replicas on one PostgreSQL.
# Reported as B's throughput over A's, with p99 and each process's RSS.
#
#   bash Benchmarks/shared-state.sh            # 10 s per load test
#   DURATION=3s bash Benchmarks/shared-state.sh
#
# PostgreSQL is the throwaway cluster of .ci/postgres.sh (fsync off: a
# fixture's database, not a durable one). Load goes to 127.0.0.1 only: two
# wrk threads, 32 connections, bounded by DURATION.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10s}
PORT=${PORT:-18280}
MEMORY_PORT=$PORT; REPLICA_A=$((PORT + 1)); REPLICA_B=$((PORT + 2)); LB_MEMORY=$((PORT + 3)); LB_SHARED=$((PORT + 4)); LB_STICKY=$((PORT + 5))
CONNECTIONS=${CONNECTIONS:-32}

missing=()
for tool in wrk nginx; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
    apt-get update -qq && apt-get install -y -qq "${missing[@]/nginx/nginx-light}" >/dev/null
fi
bash .ci/postgres.sh setup
DATABASE=$(bash .ci/postgres.sh url)
source Benchmarks/common.sh

NAMESPACE="bench-$$-$RANDOM"
"$DOPPEL" serve contracts/tales.yaml --port "$MEMORY_PORT" --log-format none >/dev/null & PIDS+=($!); MEMORY_PID=$!
"$DOPPEL" serve contracts/tales.yaml --port "$REPLICA_A" --log-format none --state-store "$DATABASE" --state-namespace "$NAMESPACE" >/dev/null & PIDS+=($!); A_PID=$!
"$DOPPEL" serve contracts/tales.yaml --port "$REPLICA_B" --log-format none --state-store "$DATABASE" --state-namespace "$NAMESPACE" >/dev/null & PIDS+=($!); B_PID=$!
for port in "$MEMORY_PORT" "$REPLICA_A" "$REPLICA_B"; do wait_for "http://127.0.0.1:$port/__doppel/health"; done

cat > "$WORK/nginx.conf" <<NGINX
worker_processes 1;
pid $WORK/nginx.pid;
error_log $WORK/nginx.err;
events { worker_connections 1024; }
http {
    access_log off;
    upstream memory { server 127.0.0.1:$MEMORY_PORT; keepalive 64; }
    upstream shared { server 127.0.0.1:$REPLICA_A; server 127.0.0.1:$REPLICA_B; keepalive 64; }
    server { listen 127.0.0.1:$LB_MEMORY; location / { proxy_pass http://memory; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host \$http_host; } }
    server { listen 127.0.0.1:$LB_SHARED; location / { proxy_pass http://shared; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host \$http_host; } }
    # The same replicas, each session kept on one of them (docs/shared-state.md: their copies of its row stay current).
    upstream sticky { hash \$http_doppel_session consistent; server 127.0.0.1:$REPLICA_A; server 127.0.0.1:$REPLICA_B; keepalive 64; }
    server { listen 127.0.0.1:$LB_STICKY; location / { proxy_pass http://sticky; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host \$http_host; } }
}
NGINX
nginx -c "$WORK/nginx.conf"
MEMORY="http://127.0.0.1:$LB_MEMORY"; SHARED="http://127.0.0.1:$LB_SHARED"; STICKY="http://127.0.0.1:$LB_STICKY"
wait_for "$MEMORY/__doppel/health"; wait_for "$SHARED/__doppel/health"; wait_for "$STICKY/__doppel/health"

TOKEN='Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIzZjJiOGMxZS03ZDRhLTRlNTktOWIxYy0yYTZmMGU4ZDRjNzEiLCJyb2xlIjoiYXV0aGVudGljYXRlZCJ9.c2lnbmF0dXJl'
# Premium sessions, so every generate succeeds (the 200 path, with effects), each made through its balancer.
session() {  # session BASE ID -> a child id
    curl -s -X POST -H "Authorization: $TOKEN" -H "Doppel-Session: $2" \
        "$1/api/v1/subscription/purchase?plan_tier=premium&billing_cycle=monthly&payment_method=card" >/dev/null
    curl -s -H "Authorization: $TOKEN" -H "Doppel-Session: $2" -H 'Content-Type: application/json' \
        -d '{"name":"Bench","age_category":"5-7","gender":"male","interests":["x"]}' "$1/api/v1/children" | sed -E 's/.*"id":"([^"]+)".*/\1/'
}
body() { echo "{\"language\":\"ru\",\"child_id\":\"$1\",\"story_type\":\"child\"}"; }
script() {  # script BASE NAME SESSIONS -> a wrk script taking the sessions in turn
    local base=$1 name=$2 count=$3
    {
        echo 'local sessions = {'
        for i in $(seq 0 $((count - 1))); do echo "  {\"$name-$i\", '$(body "$(session "$base" "$name-$i")")'},"; done
        echo '}'
        cat <<LUA
local requests, counter = {}, 0
init = function(args)
    for i, s in ipairs(sessions) do
        requests[i] = wrk.format("POST", "/api/v1/stories/generate", { ["Authorization"] = "$TOKEN", ["Doppel-Session"] = s[1], ["Content-Type"] = "application/json" }, s[2])
    end
end
request = function()
    counter = counter % #requests + 1
    return requests[counter]
end
local statuses = {}
response = function(status) statuses[status] = (statuses[status] or 0) + 1 end
LUA
    } > "$WORK/$name.lua"
}
script "$MEMORY" memory-32 32; script "$SHARED" shared-32 32
script "$MEMORY" memory-1 1; script "$SHARED" shared-1 1

load() {  # load URL [wrk args...] -> "requests/s p99 non-2xx requests"
    local url=$1; shift
    wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency "$@" "$url" \
        | awk '/Requests\/sec/ { rps = $2 } / 99%/ { p99 = $2 } /Non-2xx/ { bad = $4 } / requests in / { n = $1 } END { print rps, p99, bad + 0, n }'
}
echo "Through nginx ($DURATION each, $CONNECTIONS connections, 2 wrk threads): two replicas on PostgreSQL (B) against one in-memory server (A)"
printf '  %-58s %10s %9s %10s %9s %7s\n' request "A req/s" "A p99" "B req/s" "B p99" "B/A"
row() {  # row LABEL PATH ARGS_A ARGS_B
    local label=$1 path=$2 a_args=$3 b_args=$4
    # shellcheck disable=SC2086
    read -r ra pa bad_a LAST_A_REQUESTS <<<"$(load "$MEMORY$path" $a_args)"
    # shellcheck disable=SC2086
    read -r rb pb bad_b LAST_B_REQUESTS <<<"$(load "${B_BALANCER:-$SHARED}$path" $b_args)"
    if [ "$bad_a" != 0 ] || [ "$bad_b" != 0 ]; then echo "  ($label: $bad_a and $bad_b answers were not 2xx)" >&2; exit 1; fi
    printf '  %-58s %10s %9s %10s %9s %7.2f\n' "$label" "$ra" "$pa" "$rb" "$pb" "$(echo "$rb / $ra" | bc -l)"
}
row "GET /api/v1/free-stories (no state)" "/api/v1/free-stories?language=en" "" ""
# Sessions the replicas wrote after a plain read and under the row's lock, the plain writes that lost to
# another write of the session, and the requests decided on a replica's copy of their row and of them those
# whose copy was stale (their writes lost too), together (a build without the counts: 0).
writes() {
    for port in "$REPLICA_A" "$REPLICA_B"; do curl -s "http://127.0.0.1:$port/__doppel/health"; echo; done | python3 -c '
import json, sys
stores = [json.loads(line).get("state_store", {}) for line in sys.stdin if line.strip()]
keys = ("sessions_written_unlocked", "sessions_written_locked", "writes_lost", "sessions_decided_on_copies", "copies_stale")
print(*(sum(s.get(key, 0) for s in stores) for key in keys))'
}
stateful() {  # stateful LABEL MEMORY-SCRIPT SHARED-SCRIPT: the row, and how the replicas wrote its sessions
    read -r unlocked locked lost copied stale < <(writes)
    row "$1" "/api/v1/stories/generate" "-s $WORK/$2.lua" "-s $WORK/$3.lua"
    read -r unlocked2 locked2 lost2 copied2 stale2 < <(writes)
    printf '  %-58s sessions written without a lock %d (plain writes lost to another %d), under the lock %d\n' "" \
        $((unlocked2 - unlocked)) $((lost2 - lost)) $((locked2 - locked))
    printf '  %-58s decided on a replica'"'"'s copy of the row %d (the copy stale %d)\n' "" $((copied2 - copied)) $((stale2 - stale))
}
stateful "POST /api/v1/stories/generate, 32 sessions" memory-32 shared-32
# The same, the balancer keeping each session on one replica (B's balancer only: A is one server either way).
B_BALANCER=$STICKY stateful "POST /api/v1/stories/generate, 32 sessions, sticky" memory-32 shared-32
stateful "POST /api/v1/stories/generate, one session" memory-1 shared-1
# The same 32 sessions with an events reader (what the dashboard opens) on the in-memory server and on
# replica A: A's reader gets B's answers too, sent between the replicas (docs/shared-state.md, "Events").
READERS=()
for target in "memory:$MEMORY_PORT" "replica:$REPLICA_A"; do
    name=${target%%:*}
    # Counted as they come (not kept: the in-memory server sends tens of thousands).
    { curl -sN "http://127.0.0.1:${target#*:}/__doppel/events" & echo $! >"$WORK/reader-$name.pid"; wait; } \
        | grep -c '^event: request' >"$WORK/events-$name.txt" & READERS+=($!)
done
sleep 1  # the replicas learn from A's heartbeat that a reader is open
PIDS+=("$(cat "$WORK/reader-memory.pid")" "$(cat "$WORK/reader-replica.pid")")
stateful "POST /api/v1/stories/generate, 32 sessions, events read" memory-32 shared-32
# B's events reach A one notification at a time: wait (at most 30 s) until A has received all B sent.
settled() {
    python3 - "$REPLICA_A" "$REPLICA_B" <<'PY'
import json, sys, urllib.request
a, b = (json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/__doppel/health", timeout=5))["state_store"]["replica_messages"] for port in sys.argv[1:])
sys.exit(0 if b["waiting_bytes"] == 0 and a["received"] >= b["sent"] else 1)
PY
}
for _ in $(seq 1 60); do settled && break; sleep 0.5; done
sleep 0.5
kill "$(cat "$WORK/reader-memory.pid")" "$(cat "$WORK/reader-replica.pid")" 2>/dev/null || true
wait "${READERS[@]}" || true  # grep -c ends once its reader has
printf '  %-58s events read: from the in-memory server %d of its %d answers; from replica A %d of the %d both replicas gave\n' "" \
    "$(cat "$WORK/events-memory.txt")" "$LAST_A_REQUESTS" "$(cat "$WORK/events-replica.txt")" "$LAST_B_REQUESTS"
for port in "$REPLICA_A" "$REPLICA_B"; do
    printf '  %-58s replica on %d: messages %s\n' "" "$port" \
        "$(curl -s "http://127.0.0.1:$port/__doppel/health" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["state_store"]["replica_messages"]))')"
done
rss() { awk '/VmRSS/ { printf "%.1f MB", $2 / 1024 }' "/proc/$1/status"; }
# PostgreSQL's processes share their buffers: summed as proportional set size (each shared page counted once).
postgres_pss=$(for pid in $(pgrep -u postgres); do awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null; done | awk '{ s += $1 } END { printf "%.1f MB", s / 1024 }')
echo "Resident memory after the load: in-memory server $(rss "$MEMORY_PID"); replicas $(rss "$A_PID") and $(rss "$B_PID"); PostgreSQL, all its processes (PSS), $postgres_pss"
# The journal is exact once the answers are given: both replicas' entries, read through either. (Of a session of
# the last load: the namespace keeps its newest 10,000 entries, --journal-size, so the earlier loads' are gone.)
# A sweep trimming the journal may run between the two reads: read again (at most 10 s) until they agree.
entries() { curl -s "http://127.0.0.1:$1/__doppel/journal?session=shared-32-0" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])'; }
for _ in $(seq 1 10); do
    a=$(entries "$REPLICA_A"); b=$(entries "$REPLICA_B")
    [ "$a" = "$b" ] && break
    sleep 1
done
echo "Journal entries of one of the last load's 32 sessions, read through replica A: $a, through replica B: $b"
