# What the load benchmarks share (sourced by run.sh and shared-state.sh):
# the release build, a work folder nginx can read, the processes to stop
# on exit, and waiting for a server's first answer.

# DOPPEL=path measures that binary (an older build beside today's, run
# alternately); otherwise the release build, whose output is shown only
# when it fails.
if [ -z "${DOPPEL:-}" ]; then
    if ! build_log=$(swift build -c release --product doppel 2>&1); then echo "$build_log" >&2; exit 1; fi
    DOPPEL=.build/release/doppel
fi
WORK=$(mktemp -d)
chmod 755 "$WORK"  # nginx's workers run as an unprivileged user
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

wait_for() {  # wait_for URL
    for _ in $(seq 1 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.025; done
    echo "no answer from $1" >&2; exit 1
}
