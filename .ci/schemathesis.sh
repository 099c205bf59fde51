#!/usr/bin/env bash
# Schemathesis against Doppel serving each bundled contract's export: the
# checks not_a_server_error, status_code_conformance,
# content_type_conformance and response_schema_conformance must all pass.
# Bounded: a few examples an operation, and a time limit a contract.
# Usage: bash .ci/schemathesis.sh PATH-TO-DOPPEL
set -euo pipefail
cd "$(dirname "$0")/.."
doppel="$1"
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore 'schemathesis>=4,<5'

# A JWT, for the contracts whose operations take a bearer token; an API key for those that take one.
jwt="eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIzZjJiOGMxZS03ZDRhLTRlNTktOWIxYy0yYTZmMGU4ZDRjNzEiLCJyb2xlIjoiYXV0aGVudGljYXRlZCJ9.c2lnbmF0dXJl"
work=$(mktemp -d)
server=""
cleanup() { if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$work"; }
trap cleanup EXIT

for contract in contracts/*.yaml; do
    name=$(basename "$contract" .yaml)
    "$doppel" export "$contract" -o "$work/$name.json"
    base=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['servers'][0]['url'].rstrip('/'))" "$work/$name.json")
    # Port 0: the server prints the port it listens on.
    "$doppel" serve "$work/$name.json" --port 0 --log-format none > "$work/$name.serve.log" 2>&1 &
    server=$!
    port=""
    for _ in $(seq 1 100); do
        port=$(sed -n 's|^Listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/$name.serve.log")
        [ -n "$port" ] && break
        sleep 0.1
    done
    if [ -z "$port" ]; then echo "schemathesis: the export of $contract did not start serving" >&2; cat "$work/$name.serve.log" >&2; exit 1; fi
    echo "schemathesis: $contract's export on 127.0.0.1:$port$base"
    timeout 300 schemathesis run "$work/$name.json" --url "http://127.0.0.1:$port$base" \
        -H "Authorization: Bearer $jwt" -H "X-API-Key: ci-key" \
        --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
        --max-examples 15 --seed 1 --no-color
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=""
done
