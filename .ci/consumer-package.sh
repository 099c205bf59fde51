#!/usr/bin/env bash
# Builds a separate package from the code blocks of README.md and
# docs/testing.md that name a file (```swift Package.swift), beside a link to
# this checkout named Doppel (their Package.swift depends on "../Doppel"),
# and runs its tests: the snippets must compile and pass as written.
# The package also gets what a real one would hold: the tales contract (in
# contracts/ and as a test resource) and the tales scenarios.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${CONSUMER_DIR:-$(mktemp -d)}"
mkdir -p "$work"
ln -sfn "$repo" "$work/Doppel"
package="$work/TalesClient"
rm -rf "$package/Sources" "$package/Tests" "$package/Package.swift" "$package/contracts" "$package/scenarios"
mkdir -p "$package"

python3 - "$package" "$repo/README.md" "$repo/docs/testing.md" <<'PY'
import os, re, sys
package, documents = sys.argv[1], sys.argv[2:]
written = {}
for document in documents:
    text = open(document, encoding="utf-8").read()
    for match in re.finditer(r"^```swift[ \t]+(\S+)[ \t]*\n(.*?)^```[ \t]*$", text, re.M | re.S):
        name, code = match.group(1), match.group(2)
        if name in written and written[name] != code:
            sys.exit(f"{document}: {name} is given twice, differently")
        written[name] = code
        path = os.path.join(package, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w", encoding="utf-8").write(code)
if "Package.swift" not in written:
    sys.exit("no code block names Package.swift")
for name in sorted(written):
    print(f"consumer package: {name}")
PY

mkdir -p "$package/contracts" "$package/scenarios" "$package/Tests/TalesClientTests/Contracts"
cp "$repo/contracts/tales.yaml" "$package/contracts/"
cp "$repo/contracts/tales.yaml" "$package/Tests/TalesClientTests/Contracts/"
cp -R "$repo/scenarios/tales" "$package/scenarios/"

cd "$package"
swift test
