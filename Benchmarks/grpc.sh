#!/usr/bin/env bash
# gRPC: unary calls through Doppel's HTTP/2 door (contracts/tales-grpc.yaml's
# GetUsage: the session read, a four-field template, the message encoded by
# the .proto), loaded with h2load. Beside it, in the same run: nginx serving
# the same bytes over h2c (the limit, as in run.sh; it sends no trailers), and
# a peer gRPC server, Python's grpcio (its C core) answering the same method
# with a fixed message (Benchmarks/grpc-peer.py).
#
#   bash Benchmarks/grpc.sh            # 10 s per row
#   DURATION=5 bash Benchmarks/grpc.sh
#
# Load goes to 127.0.0.1 only: two h2load threads, 32 connections of up to
# 10 streams each, bounded by DURATION seconds. Needs h2load (nghttp2-client),
# nginx and grpcio (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
PORT=${PORT:-18180}            # doppel serving contracts/tales-grpc.yaml
NGINX_PORT=$((PORT + 1))       # nginx serving the same bytes over h2c
PEER_PORT=$((PORT + 2))        # grpcio serving the same method

missing=()
command -v h2load >/dev/null || missing+=(nghttp2-client)
command -v nginx >/dev/null || missing+=(nginx-light)
if ((${#missing[@]})); then apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; fi
python3 -c "import grpc, grpc_tools" 2>/dev/null || python3 -m pip install --quiet --root-user-action=ignore grpcio grpcio-tools

source Benchmarks/common.sh

"$DOPPEL" serve contracts/tales-grpc.yaml --port "$PORT" --log-format none >/dev/null & PIDS+=($!)
wait_for "http://127.0.0.1:$PORT/__doppel/health"

# An empty GetUsageRequest, framed; and the answer's bytes, as nginx serves them.
printf '\0\0\0\0\0' > "$WORK/request.bin"
mkdir -p "$WORK/www/tales.v1.Tales"
curl -s --http2-prior-knowledge --data-binary @"$WORK/request.bin" -H 'content-type: application/grpc' -H 'te: trailers' \
    -H 'authorization: Bearer t' -H 'doppel-session: bench' -o "$WORK/www/tales.v1.Tales/GetUsage" \
    "http://127.0.0.1:$PORT/tales.v1.Tales/GetUsage"
nginx_serving "$NGINX_PORT" application/grpc http2 "keepalive_requests 100000000;"
nginx -c "$WORK/nginx.conf"

python3 Benchmarks/grpc-peer.py "$PEER_PORT" "$WORK" & PIDS+=($!)
for _ in $(seq 1 200); do (echo > "/dev/tcp/127.0.0.1/$PEER_PORT") 2>/dev/null && break; sleep 0.05; done

load() {  # load PORT -> requests per second, p99 ms (h2load's own figures)
    local out
    out=$(h2load -D "$DURATION" -c 32 -m 10 -t 2 -d "$WORK/request.bin" -H 'content-type: application/grpc' -H 'te: trailers' \
        -H 'authorization: Bearer t' -H 'doppel-session: bench' "http://127.0.0.1:$1/tales.v1.Tales/GetUsage" 2>&1)
    local rps failed
    rps=$(echo "$out" | awk '/^finished in/ {print $4}')
    failed=$(echo "$out" | awk '/^requests:/ { for (i = 2; i <= NF; i++) if ($i ~ /^failed/) print $(i - 1) }')
    [ "$failed" = "0" ] || { echo "$out" >&2; echo "h2load saw $failed failed requests on port $1" >&2; exit 1; }
    echo "$rps"
}

doppel=$(load "$PORT")
nginx_rps=$(load "$NGINX_PORT")
peer=$(load "$PEER_PORT")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "gRPC unary GetUsage (h2load, 32 connections, 10 streams each, ${DURATION} s)"
printf '  %-34s %10s req/s\n' "Doppel" "$doppel"
printf '  %-34s %10s req/s   Doppel %s of it\n' "nginx, the same bytes over h2c" "$nginx_rps" "$(ratio "$doppel" "$nginx_rps")"
printf '  %-34s %10s req/s   Doppel %s of it\n' "grpcio (C core), a fixed answer" "$peer" "$(ratio "$doppel" "$peer")"
