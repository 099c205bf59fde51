#!/usr/bin/env bash
# Builds a separate package from the code blocks of README.md and
# docs/testing.md that name a file (```swift Package.swift), beside a link to
# this checkout named Doppel (their Package.swift depends on "../Doppel"),
# and runs its tests: the snippets must compile and pass as written.
# The package's contract and scenarios are put in place by the README's
# ```sh setup.sh block, run as written.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "${CONSUMER_DIR:-}" ]; then
    work="$CONSUMER_DIR"
else
    # A folder of its own, removed afterwards: its build is over a gigabyte.
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
ln -sfn "$repo" "$work/Doppel"
package="$work/TalesClient"
rm -rf "$package/Sources" "$package/Tests" "$package/Package.swift" "$package/contracts" "$package/scenarios"
mkdir -p "$package"

write_blocks() {
python3 - "$package" "$@" <<'PY'
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
# The README's setup commands, run beside the package as a reader runs them.
setups = [m.group(1) for document in documents
          for m in re.finditer(r"^```sh[ \t]+setup\.sh[ \t]*\n(.*?)^```[ \t]*$", open(document, encoding="utf-8").read(), re.M | re.S)]
if len(setups) != 1:
    sys.exit(f"expected one ```sh setup.sh block, found {len(setups)}")
open(os.path.join(os.path.dirname(package), "setup.sh"), "w", encoding="utf-8").write(setups[0])
PY
}

# The README's blocks alone, as a reader pastes them: the package they make
# must load (every target with its sources) before docs/testing.md adds to it.
# The package's contracts and scenarios come from the README's own setup
# block, so a reader who pastes it gets what this script builds.
write_blocks "$repo/README.md"
(cd "$work" && bash -euo pipefail setup.sh)
(cd "$package" && swift package describe >/dev/null) || { echo "the README's package does not load as pasted" >&2; exit 1; }

# Then with docs/testing.md's blocks: they compile and their tests pass.
write_blocks "$repo/README.md" "$repo/docs/testing.md"
(cd "$work" && bash -euo pipefail setup.sh)
cd "$package"
# CONSUMER_SCRATCH: a build folder to share (.ci/run gives the checkout's
# own, so the dependencies its tests built are not built again; the code
# is compiled as written either way).
swift test ${CONSUMER_SCRATCH:+--scratch-path "$CONSUMER_SCRATCH"}
