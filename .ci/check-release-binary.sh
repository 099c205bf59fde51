#!/usr/bin/env bash
# The release binary (scripts/release.sh) runs without the Swift toolchain:
# it links no Swift library dynamically nor libcurl, and with the toolchain's folder
# hidden (an empty tmpfs mounted over it, in a mount namespace of its own)
# it prints its version and serves a contract.
set -euo pipefail
cd "$(dirname "$0")/.."

archive="$(bash scripts/release.sh | tail -1)"
unpacked="$(mktemp -d)"
trap 'rm -rf "$unpacked"' EXIT
tar -C "$unpacked" -xzf "$archive"
binary="$unpacked/doppel"

if ldd "$binary" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|lib_Foundation|libicu'; then
    echo "the release binary links the Swift libraries above dynamically" >&2
    exit 1
fi

# Nor libcurl: Foundation's networking would load it and some thirty
# libraries into every server (about 6 MB resident) for code it never runs.
if ldd "$binary" | grep -E 'libcurl|FoundationNetworking'; then
    echo "the release binary links Foundation's networking (libcurl)" >&2
    exit 1
fi

toolchain="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")"   # e.g. /opt/swift/usr
port=18967
unshare --mount --propagation private bash -euo pipefail -c '
    mount -t tmpfs none "$1"
    [ -z "$(ls -A "$1")" ] || { echo "the toolchain is still in reach" >&2; exit 1; }
    "$2" --version
    "$2" serve contracts/tales.yaml --host 127.0.0.1 --port "$3" --log-format none >/dev/null &
    server=$!
    for _ in $(seq 100); do
        if python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)" "http://127.0.0.1:$3/api/v1/free-stories?language=en" 2>/dev/null; then
            kill "$server"; wait "$server" || true
            echo "release binary: serves contracts/tales.yaml with $1 hidden"
            exit 0
        fi
        sleep 0.1
    done
    echo "the release binary did not serve contracts/tales.yaml" >&2
    kill "$server" 2>/dev/null || true
    exit 1
' hide "$toolchain" "$binary" "$port"

# A 2.9 MB vendor-shaped document of 1,100 operations is served in bounded
# memory (the time to its first answer is reported, not checked).
python3 Benchmarks/vendor-document.py "$binary" --max-rss-mb 100
