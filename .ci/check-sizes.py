#!/usr/bin/env python3
"""Sizes the issue of the one house set: no Swift file in Sources/ over 500
lines, and no function (or initialiser, closure-bodied property) over 80
lines, outside the table-like ones listed below with why."""
import pathlib, re, sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILE_LIMIT, FUNCTION_LIMIT = 500, 80
# `--limits FILE,FUNCTION`: other limits, to show the check can fail.
if len(sys.argv) == 3 and sys.argv[1] == '--limits':
    FILE_LIMIT, FUNCTION_LIMIT = (int(n) for n in sys.argv[2].split(','))
# Table-like functions: one case or row per line, longer only because the table is.
TABLES = {
    'Sources/DoppelCore/Expressions/ExpressionLexer.swift:func tokenize': 'a case per kind of token',
    'Sources/DoppelCore/Expressions/ExpressionParser.swift:func parsePrimary': 'a case per kind of primary expression',
    'Sources/DoppelCore/Expressions/ExpressionChecker.swift:func check': 'a case per kind of expression node',
    'Sources/DoppelCore/Expressions/Functions.swift:func callEager': 'a case per built-in function (over 60)',
    'Sources/DoppelCore/Loading/ContractLoader+Endpoints.swift:func readEndpoint': "a few lines per key of an endpoint",
    'Sources/DoppelCore/Loading/ContractLoader+Responses.swift:func readResponse': "a few lines per key of a response",
    'Sources/DoppelCore/Loading/ContractLoader+Schema.swift:func readSchema': 'a few lines per JSON Schema keyword',
    'Sources/DoppelCore/Loading/ContractLoader+Auth.swift:func readAuth': "a few lines per key of an auth scheme",
    'Sources/DoppelCore/Scenario/ScenarioLoader.swift:func readSteps': "a few lines per key of a step",
    'Sources/DoppelCore/Scenario/ScenarioLoader+Sockets.swift:func readSocketStep': "a few lines per key of a socket step",
}

DECL = re.compile(r'^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|private|fileprivate|internal|static|final|override|mutating|nonisolated|convenience|required|@inlinable)\s+)*(func\s+[^\s(<]+|init[?!]?|deinit|subscript)\b')

def strip(line, in_block):
    """The line without strings and comments (approximate: enough to count braces)."""
    out, i, n = [], 0, len(line)
    while i < n:
        if in_block:
            j = line.find('*/', i)
            if j < 0: return ''.join(out), True
            i, in_block = j + 2, False
            continue
        c = line[i]
        if line.startswith('//', i): break
        if line.startswith('/*', i): in_block = True; i += 2; continue
        if c == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == '\\' else 1
            i = j + 1
            continue
        out.append(c); i += 1
    return ''.join(out), in_block

def functions(path):
    lines = path.read_text().splitlines()
    in_block, in_multiline = False, False
    cleaned = []
    for line in lines:
        if line.count('"""') % 2 == 1:
            in_multiline = not in_multiline
            cleaned.append(''); continue
        if in_multiline: cleaned.append(''); continue
        text, in_block = strip(line, in_block)
        cleaned.append(text)
    for start, text in enumerate(cleaned):
        m = DECL.match(text)
        if not m: continue
        depth, opened = 0, False
        for end in range(start, len(cleaned)):
            for c in cleaned[end]:
                if c == '{': depth += 1; opened = True
                elif c == '}': depth -= 1
            if opened and depth <= 0: break
            if not opened and end > start + 10: break
        if opened:
            yield m.group(1), start + 1, end - start + 1

problems = []
for path in sorted((ROOT / 'Sources').rglob('*.swift')):
    rel = path.relative_to(ROOT)
    count = len(path.read_text().splitlines())
    if count > FILE_LIMIT:
        problems.append(f'{rel}: {count} lines (at most {FILE_LIMIT})')
    for name, line, length in functions(path):
        if length > FUNCTION_LIMIT and f'{rel}:{name}' not in TABLES:
            problems.append(f'{rel}:{line}: {name}: {length} lines (at most {FUNCTION_LIMIT})')
for p in problems: print(p)
print(f'check-sizes: {len(problems)} problems', file=sys.stderr)
sys.exit(1 if problems else 0)
