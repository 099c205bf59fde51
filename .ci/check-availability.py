#!/usr/bin/env python3
"""Fails when Sources/ uses an API that the toolchain's own interface files
mark available only on a newer macOS or iOS than Package.swift declares.

No Mac runs here, and Linux compiles what a Mac refuses: `Atomic` or
`String(validating:as:)` build on Linux, and on macOS 14 they are errors.
The installed toolchain's `.swiftinterface` files carry the Apple
availability of every declaration (`@available(macOS 15.0, iOS 18.0, ...)`),
so reading them tells what a Mac's compiler would say.

What is checked, from those files (the standard library, concurrency,
synchronization, regex, observation and Foundation's modules):
- types (`struct`, `class`, `enum`, `protocol`, `actor`, `typealias`)
  marked newer than the declared platforms, used by name in Sources/;
- initialisers marked newer, used as `Type(firstLabel:`.
Methods and properties are not matched by name: `.withLock` or `.kind` of
Doppel's own types would read as the standard library's; their types are
(a use of `Atomic`'s `wrappingAdd` goes through `Atomic`).
A use inside a declaration or block marked `@available(macOS N` or guarded
by `if #available(macOS N` (N at least the API's) on the few lines above
it is allowed. It is a reading of text, not a compiler: it finds the APIs
that have bitten before and their kind; a clean run is not a proof.

Usage: python3 .ci/check-availability.py   (exit 1 with each use listed)
       python3 .ci/check-availability.py --declared macOS=14,iOS=17   (other platforms than the manifest's)
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ["Swift", "_Concurrency", "Synchronization", "_StringProcessing", "RegexBuilder", "Observation",
           "Foundation", "FoundationEssentials", "FoundationInternationalization", "Dispatch"]
PLATFORMS = {"macOS": "macOS", "iOS": "iOS"}


def version(text):
    return tuple(int(part) for part in text.split("."))


def declared_platforms():
    manifest = open(os.path.join(ROOT, "Package.swift"), encoding="utf-8").read()
    found = {}
    for platform in PLATFORMS:
        match = re.search(r"\." + platform + r"\(\.v(\d+)(?:_(\d+))?\)", manifest)
        if match:
            found[platform] = (int(match.group(1)), int(match.group(2) or 0))
    return found


def interface_files():
    resource = subprocess.run(["swift", "-print-target-info"], capture_output=True, text=True)
    paths = re.findall(r'"runtimeResourcePath"\s*:\s*"([^"]+)"', resource.stdout)
    base = paths[0] if paths else "/usr/lib/swift"
    files = []
    for module in MODULES:
        files += glob.glob(os.path.join(base, "*", module + ".swiftmodule", "*.swiftinterface"))
        files += glob.glob(os.path.join(base, "*", module + ".swiftmodule", "*", "*.swiftinterface"))
    return [f for f in files if not f.endswith(".private.swiftinterface")]


DECLARATION = re.compile(
    r"^\s*(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:(?:public|open|final|static|class|mutating|nonmutating|indirect|override|convenience|required|dynamic|nonisolated|consuming|borrowing|__consuming|isolated|package)\s+)*"
    r"(struct|class|enum|protocol|actor|typealias|func|init|var|let|extension|subscript)\b\s*([?!]?)\s*(?:<[^>]*>)?\s*([\w.]*)")


def newer_apis(files, declared):
    """(types, inits, members): each name with the newest platform versions it needs."""
    types, inits, members, older_members = {}, {}, {}, set()
    for path in files:
        pending = None  # availability read on the lines just before a declaration
        scope = []  # (type name, depth, availability of the scope)
        depth = 0
        for line in open(path, encoding="utf-8", errors="replace"):
            stripped = line.strip()
            availability = {p: version(v) for p, v in re.findall(r"\b(macOS|iOS) (\d+(?:\.\d+)*)", stripped)} if stripped.startswith("@available(") else None
            if availability:
                pending = {**(pending or {}), **availability}
            match = DECLARATION.match(line)
            if match and not stripped.startswith("@available("):
                kind, _, name = match.group(1), match.group(2), match.group(3)
                needs = dict(scope[-1][2]) if scope else {}
                for p, v in (pending or {}).items():
                    needs[p] = max(needs.get(p, (0,)), v)
                newer = any(p in declared and v > declared[p] for p, v in needs.items())
                enclosing = scope[-1][0] if scope else None
                if kind in ("struct", "class", "enum", "protocol", "actor", "typealias") and name:
                    if newer and not enclosing:
                        types[name] = needs
                elif kind == "init" and enclosing:
                    label = re.search(r"init[?!]?\s*(?:<[^>]*>)?\s*\(\s*(\w+)", line)
                    if label and label.group(1) != "_" and newer:
                        inits.setdefault((enclosing.split(".")[-1], label.group(1)), needs)
                elif kind in ("func", "var", "let") and name:
                    (members.setdefault(name, needs) if newer else older_members.add(name))
                if kind in ("struct", "class", "enum", "protocol", "actor", "extension") and "{" in line:
                    scope.append((name, depth, needs if kind != "extension" else (pending or {})))
                pending = None
            elif stripped and not stripped.startswith("@"):
                pending = None
            depth += line.count("{") - line.count("}")
            while scope and depth <= scope[-1][1]:
                scope.pop()
    members = {name: needs for name, needs in members.items() if name not in older_members and len(name) > 3}
    return types, inits, members


def guarded(lines, index, needs):
    """Whether a use is under `@available`/`#available` for at least what it needs, on the lines above it."""
    for line in reversed(lines[max(0, index - 40):index + 1]):
        for platform, text in re.findall(r"[@#]available\((macOS|iOS) (\d+(?:\.\d+)*)", line):
            if platform in needs and version(text) >= needs[platform]:
                return True
    return False


def main():
    declared = declared_platforms()
    # `--declared macOS=14,iOS=17`: check against other platforms than the
    # manifest's, so CI can show that the check fails where it should.
    if len(sys.argv) == 3 and sys.argv[1] == "--declared":
        declared = {p: (int(v.split(".")[0]), int((v.split(".") + ["0"])[1])) for p, v in (item.split("=") for item in sys.argv[2].split(","))}
    if not declared:
        print("check-availability: Package.swift declares no macOS or iOS platform", file=sys.stderr)
        return 1
    files = interface_files()
    if not files:
        print("check-availability: no .swiftinterface files found in the toolchain", file=sys.stderr)
        return 1
    types, inits, members = newer_apis(files, declared)
    declared_text = ", ".join(f"{p} {'.'.join(map(str, v))}" for p, v in declared.items())
    problems = []
    for source in sorted(glob.glob(os.path.join(ROOT, "Sources", "**", "*.swift"), recursive=True)):
        lines = open(source, encoding="utf-8").read().split("\n")
        for index, line in enumerate(lines):
            code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', line.split("//")[0])
            uses = []
            for name, needs in types.items():
                if re.search(r"(?<![\w.])" + re.escape(name) + r"\b(?!\s*:)", code):
                    uses.append((name, needs))
            for (type_name, label), needs in inits.items():
                if re.search(r"\b" + re.escape(type_name) + r"(?:\.init)?\(\s*" + re.escape(label) + r"\s*:", code):
                    uses.append((f"{type_name}({label}:)", needs))
            for api, needs in uses:
                if not guarded(lines, index, needs):
                    wanted = ", ".join(f"{p} {'.'.join(map(str, v))}" for p, v in sorted(needs.items()) if p in declared)
                    problems.append(f"{os.path.relpath(source, ROOT)}:{index + 1}: {api} needs {wanted}; Package.swift declares {declared_text}")
    for problem in problems:
        print(problem)
    print(f"check-availability: {len(types)} types and {len(inits)} initialisers newer than {declared_text} "
          f"in {len(files)} interface files; {len(problems)} uses in Sources/")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
