#!/usr/bin/env bash
# Builds a `doppel` a user can take away: release mode and, on Linux, the
# Swift runtime and Foundation linked statically (--static-swift-stdlib), so
# it runs where no Swift toolchain is installed; it needs only the system's
# C libraries (glibc, libstdc++, libgcc, zlib). On macOS the Swift runtime is part
# of the system (macOS 15, as Package.swift declares), so the build is a
# plain release build. Writes dist/doppel-VERSION-OS-ARCH.tar.gz and prints
# its path.
#
#   bash scripts/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."

flags=(-c release --product doppel)
[ "$(uname -s)" = Linux ] && flags+=(--static-swift-stdlib)
swift build "${flags[@]}"
binary="$(swift build "${flags[@]}" --show-bin-path)/doppel"

version="$("$binary" --version)"
os="$(uname -s | tr '[:upper:]' '[:lower:]')"
arch="$(uname -m)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp "$binary" "$stage/doppel"
strip "$stage/doppel" 2>/dev/null || true
mkdir -p dist
archive="dist/doppel-$version-$os-$arch.tar.gz"
tar -C "$stage" -czf "$archive" doppel
echo "$archive"
