# What the load benchmarks share (sourced by run.sh, grpc.sh and
# shared-state.sh): the release build, a work folder nginx can read, the
# processes to stop on exit, waiting for a server's first answer, and
# nginx's configuration for serving the same bytes.

# DOPPEL=path measures that binary (an older build beside today's, run
# alternately); otherwise the release build, whose output is shown only
# when it fails.
if [ -z "${DOPPEL:-}" ]; then
    if ! build_log=$(swift build -c release --product doppel 2>&1); then echo "$build_log" >&2; exit 1; fi
    DOPPEL=.build/release/doppel
fi
# The binary's pages written back and dropped from the page cache, so its
# resident memory is that of a binary read from disk: the same bytes just
# written (a fresh link, or a copy) measured up to 2 MB more resident here,
# all of it the binary's own clean pages, until dropped (Benchmarks/README.md,
# "The journal packed").
python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fdatasync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)' "$DOPPEL"
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

# nginx_serving PORT CONTENT-TYPE [LISTEN-OPTIONS] [HTTP-DIRECTIVES]: writes
# $WORK/nginx.conf for nginx serving $WORK/www on PORT. `error_page 405
# =200` makes it answer a POST to a static file with the file, as it
# answers the GET, so Doppel and nginx take the same request.
nginx_serving() {
    cat > "$WORK/nginx.conf" <<NGINX
worker_processes 2;
pid $WORK/nginx.pid;
error_log $WORK/nginx.err;
events { worker_connections 1024; }
http {
    access_log off;
    default_type $2;
    ${4:-}
    server { listen 127.0.0.1:$1 ${3:-}; root $WORK/www; error_page 405 =200 \$uri; }
}
NGINX
}
