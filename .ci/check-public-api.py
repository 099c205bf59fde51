#!/usr/bin/env python3
"""The libraries' public surface: what an embedding program, a test suite
or the CLI needs, each declaration documented.

Fails when a `public` declaration of a library target has no `///` comment
right above it (attributes may stand between), or when DoppelCore's count
of public declarations goes past its budget: what only Doppel's own modules
use is `package`. Run by .ci/run.
"""
import pathlib
import re
import sys

BUDGET = 300
sources = pathlib.Path(__file__).resolve().parent.parent / "Sources"
libraries = ["DoppelCore", "DoppelServer", "DoppelRunner", "DoppelTesting", "DoppelOpenAPI"]
declaration = re.compile(r"^\s*public\b(?!\s+(import|extension)\b)")
# Members a protocol requires, whose meaning is the protocol's: documented there.
protocol_members = re.compile(
    r"public (static func (==|<) |func hash\(into|var description: String|init\((stringLiteral|integerLiteral|booleanLiteral|floatLiteral|arrayLiteral|dictionaryLiteral|nilLiteral))"
)

counts = {}
undocumented = []
for path in sorted(p for library in libraries for p in (sources / library).rglob("*.swift")):
    library = path.relative_to(sources).parts[0]
    lines = path.read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(lines):
        if not declaration.match(line):
            continue
        counts[library] = counts.get(library, 0) + 1
        if protocol_members.search(line):
            continue
        above = number - 1
        while above >= 0 and lines[above].strip().startswith("@"):
            above -= 1
        if above < 0 or not lines[above].strip().startswith("///"):
            undocumented.append(f"{path.relative_to(sources.parent)}:{number + 1}: {line.strip()}")

for entry in undocumented:
    print(f"{entry}\n    public without a /// comment", file=sys.stderr)
print(", ".join(f"{library} {counts.get(library, 0)}" for library in libraries)
      + f" public declarations (DoppelCore's budget {BUDGET}); {len(undocumented)} undocumented")
if undocumented or counts.get("DoppelCore", 0) > BUDGET:
    sys.exit(1)
