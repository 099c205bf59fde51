#!/usr/bin/env python3
"""Doppel's fuzzer: a seeded mutator, bounded in time, that fails on any
crash, hang or unbounded growth.

Two targets, one after the other, sharing the time given:

documents  Mutants of the bundled contracts, scenarios and OpenAPI documents
           (and of the kept corpus in Fuzz/corpus/documents) go through
           `doppel lint` or `doppel routes`: the loader, the OpenAPI
           importer, the schema and expression parsers. An exit by a signal
           (a Swift trap), an exit code other than 0 or 1, more than
           --hang-seconds, or more than --max-rss-mib of memory is a failure.
http       A `doppel serve` of the tale contract on a loopback port gets
           mutants of valid requests over raw sockets: odd methods, targets
           and versions, duplicated and conflicting framing headers,
           malformed chunks, truncated bodies, pipelined batches with HEAD.
           After every batch the server must still answer its health call in
           time, be alive, and stay under --max-rss-mib.
surfaces   What came after: a server of a contract with a WebSocket and
           callbacks gets mutated WebSocket frames (masks, RSV bits,
           opcodes, lengths, fragments, close codes), admin calls with
           hostile headers (Host, Origin, Sec-Fetch-Site, content types),
           and NUL and other control characters in paths, JSON keys and
           headers; its callbacks go to a receiver that answers mutated
           responses (status 000, 099, endless bodies). The runners
           (`doppel run --target`, `doppel verify`) go against that
           receiver as their provider: they must end, 0 or 1, in time.
           With DOPPEL_TEST_POSTGRES set, a second server keeps its
           sessions and journal there and gets the control characters too:
           it must stay healthy and drop no journal row.

Why not libFuzzer: the toolchain here builds no -sanitize=fuzzer target for
an executable package on Linux without a separate build of every
dependency, and each run would be a second full build; a mutator driving the
built binary tests the program users run, and costs no extra build.

A failing input is written to Fuzz/crashes/ and printed with the seed, and
the script exits 1. Inputs that reach a diagnostic not seen before are kept
in Fuzz/corpus/documents/ (new files there can be committed as seeds).

Usage: python3 Fuzz/fuzz.py --doppel .build/debug/doppel [--seconds 180] [--seed N] [--only documents|http|surfaces]
"""
import argparse
import hashlib
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "corpus", "documents")
CRASHES = os.path.join(ROOT, "Fuzz", "crashes")

# Tokens that have broken parsers before, or sit at their edges.
DICTIONARY = [
    "$ref: '#/paths/-1'", "$ref: '#/components/schemas/A'", "$ref: A", "minimum: 1e300", "maximum: -1e308",
    "minLength: 9223372036854775807", "maxItems: 9223372036854775807", "minItems: 99999999", "multipleOf: 0",
    "body_from_schema: true", "enum: [" + ", ".join(str(i) for i in range(50)) + "]", "pattern: '(a+)+$'",
    "pattern: '['", "{{", "}}", "{{ state.x / 0 }}", "{{ 'n' - 1 }}", "when: (((((1)))))", "effects: ['state.c += 1']",
    "*alias", "&anchor", "<<: *anchor", "!!binary", "? complex", "- - - -", "[[[[[[[[", "{{{{{{", "\t", "\x00",
    "\ufeff", "é", "\U0001F600", "'", '"', "\\", "null", "~", ".nan", ".inf", "-.inf", "0x10", "1e400", "-0",
    "9223372036854775808", "responses: []", "request: GET /{id}/{id}", "request: 'CONNECT /'", "base_path: /x",
    "type: [integer, 'null']", "oneOf: []", "allOf: [{}]", "not: {}", "additionalProperties: false", "items: false",
    "status: 999", "status: 0", "delay: 99999999s", "file: ../../../../etc/passwd", "file: /etc/passwd",
    "openapi: 3.1.0", "openapi: 2.0", "swagger: '2.0'", "contract: x.yaml", "steps: []", "doppel: 2",
]

# HTTP requests that the tale contract answers, as raw bytes; mutated below.
TOKEN = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1c2VyLTEiLCJleHAiOjQxMDI0NDQ4MDB9."
VALID_REQUESTS = [
    b"GET /api/v1/free-stories?language=en HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"HEAD /api/v1/free-stories?language=en HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    (lambda body: ("POST /api/v1/stories/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN +
                   f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n" + body).encode())(
        '{"child_id":"child-1","hero":"fox","theme":"space","language":"en"}'),
    b"GET /__doppel/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET /__doppel/journal?limit=5 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b'PUT /__doppel/scenario HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
    b"POST /api/v1/children HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n",
    b"GET /api/v1/free-stories HTTP/1.0\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
]
HTTP_TOKENS = [
    b"\r\n", b"\r\n\r\n", b"Transfer-Encoding: chunked\r\n", b"Content-Length: 5\r\n", b"Content-Length: -1\r\n",
    b"Content-Length: 99999999999999999999\r\n", b"Host: y\r\n", b"Expect: 100-continue\r\n", b"Connection: close\r\n",
    b"Connection: keep-alive, x-a\r\n", b"X-A: " + b"a" * 5000 + b"\r\n", b"HEAD", b"CONNECT", b"TRACE", b"GET",
    b" HTTP/1.0", b" HTTP/2.0", b" HTTP/0.9", b"http://127.0.0.1:1/x", b"@localhost/", b"*", b"/%00", b"/%2e%2e/",
    b"/__doppel/", b"Doppel-Session: \xff\xfe\r\n", b"Prefer: code=999\r\n", b"ffffffffffffffff\r\n", b"0\r\n\r\n",
    b"\x00", b"\xff", b"\t", b" ", b":", b"{", b"[" * 200, b"Cookie: a=b; c\r\n", b"Authorization: Bearer x\r\n",
]


def log(message):
    print(f"fuzz: {message}", flush=True)


def rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def mutate_text(rng, text, others):
    """One to four mutations of a document's text, by line, token and byte."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if not lines:
            lines = [""]
        i = rng.randrange(len(lines))
        if choice < 0.25:  # a token from the dictionary, in a line or as one
            token = rng.choice(DICTIONARY)
            if rng.random() < 0.5:
                indent = re.match(r"\s*", lines[i]).group(0)
                lines.insert(i, indent + token)
            else:
                cut = rng.randint(0, len(lines[i]))
                lines[i] = lines[i][:cut] + token + lines[i][cut:]
        elif choice < 0.40:  # a line deleted or duplicated
            if rng.random() < 0.5 and len(lines) > 1:
                del lines[i]
            else:
                lines.insert(i, lines[i])
        elif choice < 0.55:  # lines from another document spliced in
            other = rng.choice(others).split("\n")
            j = rng.randrange(len(other))
            lines[i:i] = other[j:j + rng.randint(1, 20)]
        elif choice < 0.70:  # a number made extreme
            lines[i] = re.sub(r"\b\d+\b", lambda _: rng.choice(["0", "-1", "1e300", "9223372036854775807", "18446744073709551616", "1.5"]), lines[i], count=1)
        elif choice < 0.80:  # nesting deepened
            depth = rng.choice([10, 100, 1000, 5000])
            lines[i] = lines[i] + " " + "[" * depth + "]" * depth
        elif choice < 0.90:  # indentation shifted
            lines[i] = (" " * rng.randint(0, 6)) + lines[i].lstrip()
        else:  # raw bytes changed
            line = bytearray(lines[i].encode("utf-8", "surrogateescape"))
            if line:
                line[rng.randrange(len(line))] = rng.randrange(256)
            lines[i] = line.decode("utf-8", "replace")
    return "\n".join(lines)


def diagnostic_signature(output):
    """The kinds of diagnostic an output holds: messages with quoted names and numbers taken out."""
    kinds = set()
    for line in output.splitlines():
        match = re.search(r": (error|warning): (.*)", line)
        if match:
            kinds.add(re.sub(r"'[^']*'|\d+", "_", match.group(2))[:80])
    return kinds


def fail(kind, detail, data, suffix, seed):
    os.makedirs(CRASHES, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16] + suffix
    with open(os.path.join(CRASHES, name), "wb") as out:
        out.write(data)
    log(f"FAILURE ({kind}): {detail}; input kept as Fuzz/crashes/{name}; seed {seed}")
    sys.exit(1)


def run_bounded(command, hang_seconds, max_rss_mib, cwd):
    """Runs a command; returns (returncode, output, problem) where problem names a hang or growth."""
    # Output goes to a file, not a pipe read after the exit: `routes` of a
    # document of 1,000 operations prints more than a pipe holds, and would
    # wait on the pipe forever (a hang of this harness, not of Doppel).
    with tempfile.TemporaryFile() as sink:
        process = subprocess.Popen(command, cwd=cwd, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        started = time.monotonic()
        peak = 0
        while process.poll() is None:
            rss = rss_mib(process.pid) or 0
            peak = max(peak, rss)
            if rss > max_rss_mib:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return None, "", f"grew to {rss:.0f} MiB (bound {max_rss_mib} MiB)"
            if time.monotonic() - started > hang_seconds:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return None, "", f"ran past {hang_seconds} s"
            time.sleep(0.02)
        sink.seek(0)
        output = sink.read().decode("utf-8", "replace")
    return process.returncode, output, None


def fuzz_documents(args, rng, deadline):
    seeds = []
    for folder, pattern in [("contracts", ".yaml"), ("scenarios", ".yaml"), ("Tests/DoppelServerTests/Fixtures", "")]:
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            seeds += [os.path.join(base, f) for f in files if f.endswith((".yaml", ".yml", ".json"))]
    if os.path.isdir(CORPUS):
        seeds += [os.path.join(CORPUS, f) for f in sorted(os.listdir(CORPUS))]
    texts = [(path, open(path, encoding="utf-8", errors="replace").read()) for path in sorted(seeds)]
    seen = set()
    work = tempfile.mkdtemp(prefix="doppel-fuzz-")
    runs = kept = 0
    try:
        while time.monotonic() < deadline:
            path, text = rng.choice(texts)
            mutant = mutate_text(rng, text, [t for _, t in texts])
            suffix = ".json" if path.removesuffix(".seed").endswith(".json") and rng.random() < 0.5 else ".yaml"
            file = os.path.join(work, "fuzzed" + suffix)
            with open(file, "w", encoding="utf-8", errors="surrogateescape") as out:
                out.write(mutant)
            command = [args.doppel, rng.choice(["lint", "lint", "routes"]), file]
            code, output, problem = run_bounded(command, args.hang_seconds, args.max_rss_mib, work)
            runs += 1
            data = mutant.encode("utf-8", "surrogateescape")
            if problem:
                fail("hang or growth", f"{' '.join(command[1:2])} {problem}", data, suffix, args.seed)
            if code is not None and (code < 0 or code not in (0, 1)):
                fail("crash", f"{command[1]} exited with {code}: {output[-2000:]}", data, suffix, args.seed)
            new = diagnostic_signature(output) - seen
            if new:
                seen |= new
                if args.keep_corpus:
                    os.makedirs(CORPUS, exist_ok=True)
                    # `.seed`: kept out of `doppel lint .` (not named as YAML), read here by the folder.
                    name = hashlib.sha1(data).hexdigest()[:16] + suffix + ".seed"
                    with open(os.path.join(CORPUS, name), "wb") as out:
                        out.write(data)
                    kept += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"documents: {runs} inputs, {len(seen)} kinds of diagnostic, {kept} kept, no crash, hang or growth")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def mutate_request(rng):
    batch = [rng.choice(VALID_REQUESTS) for _ in range(rng.randint(1, 5))]  # pipelined
    data = bytearray(b"".join(batch))
    for _ in range(rng.randint(0, 4)):
        choice = rng.random()
        position = rng.randint(0, len(data))
        if choice < 0.4:
            data[position:position] = rng.choice(HTTP_TOKENS)
        elif choice < 0.6 and data:
            del data[position:position + rng.randint(1, 16)]
        elif choice < 0.8 and data:
            data[min(position, len(data) - 1)] = rng.randrange(256)
        else:
            data = data[:position]  # truncated: the server waits, then times out
    return bytes(data)


def health(port, timeout):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
            connection.sendall(b"GET /__doppel/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            answer = b""
            while True:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                answer += chunk
            return answer.startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def fuzz_http(args, rng, deadline):
    port, server = start_server(args, "contracts/tales.yaml")
    try:
        # Eight clients at once, each sending batches until the deadline;
        # this thread checks the server between them.
        import threading
        lock = threading.Lock()
        state = {"batches": 0, "last": b""}

        def client(worker_seed):
            local = random.Random(worker_seed)
            while time.monotonic() < deadline:
                data = mutate_request(local)
                with lock:
                    state["last"] = data
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=3) as connection:
                        connection.sendall(data)
                        if local.random() < 0.3:
                            connection.shutdown(socket.SHUT_WR)
                        connection.settimeout(0.3 if local.random() < 0.8 else 3)
                        try:
                            while connection.recv(65536):
                                pass
                        except (socket.timeout, OSError):
                            pass
                except OSError:
                    pass
                with lock:
                    state["batches"] += 1

        workers = [threading.Thread(target=client, args=(rng.randrange(1 << 32),), daemon=True) for _ in range(8)]
        for worker in workers:
            worker.start()
        peak = 0.0
        while any(worker.is_alive() for worker in workers):
            time.sleep(0.5)
            with lock:
                last = state["last"]
            if server.poll() is not None:
                fail("crash", f"doppel serve exited with {server.returncode}: " + server.stderr.read().decode("utf-8", "replace")[-2000:],
                     last, ".http", args.seed)
            if not health(port, args.hang_seconds):
                fail("hang", f"the server gave no health answer within {args.hang_seconds} s", last, ".http", args.seed)
            rss = rss_mib(server.pid) or 0
            peak = max(peak, rss)
            if rss > args.max_rss_mib:
                fail("growth", f"the server holds {rss:.0f} MiB (bound {args.max_rss_mib} MiB)", last, ".http", args.seed)
        batches = state["batches"]
        log(f"http: {batches} batches of pipelined requests, peak {peak:.0f} MiB, no crash, hang or growth")
    finally:
        stop_server(server)


SURFACE_CONTRACT = """doppel: 1
state:
  counters: { hits: 0 }
  collections: { items: [] }
endpoints:
  live:
    request: GET /live
    websocket:
      every:
        - { name: tick, interval: 200ms, send: { tick: true } }
      on_message:
        - { name: later, when: "message == 'later'", delay: 30s, send: { late: true } }
        - { name: hit, effects: [ "state.hits += 1" ], send: "{{ message }}" }
  put-item:
    request: PUT /items/{id}
    body: { schema: { type: object, additionalProperties: false, properties: { n: { type: integer } } } }
    responses:
      - status: 200
        effects: [ "state.items[path.id] = body" ]
        body: "{{ body }}"
        callbacks:
          - { name: told, url: "http://127.0.0.1:{{ query.port }}/hook", body: { id: "{{ path.id }}" }, retries: 1, retry_delay: 100ms, timeout: 1s }
  hop:
    request: POST /hop
    responses:
      - status: 202
        callbacks:
          - { name: again, url: "http://127.0.0.1:{{ request.port }}/hop", body: {} }
"""

ADMIN_CALLS = [("GET", "/__doppel/journal"), ("GET", "/__doppel/events"), ("POST", "/__doppel/reset"), ("POST", "/__doppel/clock"),
               ("POST", "/__doppel/next"), ("PUT", "/__doppel/state"), ("GET", "/__doppel/ui/"), ("PUT", "/__doppel/scenario")]
HOSTILE_HEADERS = [b"Host: attacker.example\r\n", b"Host: localhost\r\n", b"Host: [::1]:1\r\n", b"Host: \r\n", b"Origin: null\r\n",
                   b"Origin: https://evil.example\r\n", b"Origin: http://127.0.0.1\r\n", b"Sec-Fetch-Site: cross-site\r\n",
                   b"Sec-Fetch-Site: same-origin\r\n", b"Sec-Fetch-Site: \xff\r\n", b"Content-Type: text/plain\r\n",
                   b"Content-Type: application/json\r\n", b"Content-Type: application/x-json+json;;\r\n", b"Upgrade: websocket\r\n"]
CONTROL = ["\u0000", "\u0001", "\u001f", "\u007f", "\u2028", "\ufffe", "\ud800"]


def frame(rng, opcode=None, payload=None, masked=None, fin=None, rsv=0):
    """A WebSocket frame, some parts of it chosen at random."""
    opcode = rng.randrange(16) if opcode is None else opcode
    payload = payload if payload is not None else bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 2, 5, 125, 126, 300])))
    masked = rng.random() < 0.85 if masked is None else masked
    fin = rng.random() < 0.8 if fin is None else fin
    head = bytes([(0x80 if fin else 0) | (rsv << 4) | opcode])
    length = len(payload)
    if length < 126:
        head += bytes([(0x80 if masked else 0) | length])
    elif length < 65536:
        head += bytes([(0x80 if masked else 0) | 126]) + length.to_bytes(2, "big")
    else:
        head += bytes([(0x80 if masked else 0) | 127]) + length.to_bytes(8, "big")
    if masked:
        mask = bytes(rng.randrange(256) for _ in range(4))
        return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + payload


def socket_session(rng):
    """An upgrade, then frames: valid messages, delayed ones, and broken ones."""
    data = (b"GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n")
    if rng.random() < 0.3:
        data += rng.choice(HOSTILE_HEADERS)
    data += b"Doppel-Session: s" + str(rng.randrange(4)).encode() + b"\r\n\r\n"
    for _ in range(rng.randint(1, 40)):
        kind = rng.random()
        if kind < 0.3:
            data += frame(rng, opcode=1, payload=rng.choice([b"later", b"hit", b'{"a":"\\u0000"}', "\u00e9\u0000\u0007".encode()]), masked=True, fin=True)
        elif kind < 0.45:
            code = rng.choice([0, 999, 1000, 1005, 1006, 1015, 3000, 4999, 5000, 65535])
            data += frame(rng, opcode=8, payload=code.to_bytes(2, "big") + rng.choice([b"", b"bye", b"\xff\xfe"]), masked=True, fin=True)
        elif kind < 0.55:
            data += frame(rng, opcode=rng.choice([1, 0, 0]), fin=False, masked=True) + frame(rng, opcode=0, fin=True, masked=True)
        else:
            data += frame(rng, rsv=rng.choice([0, 0, 1, 2, 4]))
    return data


def admin_call(rng):
    method, path = rng.choice(ADMIN_CALLS)
    body = rng.choice([b"", b"{}", b'{"session": "s1", "advance": "1d"}', b'{"endpoint": "put-item", "status": 200}',
                       ('{"state": {"hits": 1, "items": {"a' + rng.choice(CONTROL) + 'b": {}}}}').encode("utf-8", "surrogatepass")])
    headers = b"".join(rng.choice(HOSTILE_HEADERS) for _ in range(rng.randint(0, 3)))
    if b"Host:" not in headers:
        headers = b"Host: 127.0.0.1\r\n" + headers
    return (f"{method} {path}?session=s{rng.randrange(4)} HTTP/1.1\r\n".encode() + headers +
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)


def stored_text_request(rng, port):
    """A request whose path, JSON key or query holds a control character: each ends in some stored text."""
    character = rng.choice(CONTROL)
    encoded = "".join(f"%{b:02X}" for b in character.encode("utf-8", "surrogatepass"))
    key = "k" + character + "y"
    body = ('{"' + key.encode("unicode_escape").decode().replace('"', '') + '": 1}' if rng.random() < 0.5 else '{"n": 1}').encode()
    return (f"PUT /items/x{encoded}y?port={port}&q=a{encoded} HTTP/1.1\r\nHost: 127.0.0.1\r\nDoppel-Session: s{rng.randrange(4)}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


HOSTILE_ANSWERS = [
    b"HTTP/1.1 000 Zero\r\nContent-Length: 5\r\n\r\nhello", b"HTTP/1.1 099 Low\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nab", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\nabc",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab", b"garbage\r\n\r\n", b"",
    b"HTTP/1.1 503 No\r\nRetry-After: 99999999999\r\nContent-Length: 0\r\n\r\n", b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70000 + b"\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n" + b"\x81\x7f" + b"\xff" * 8,
    b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"a":"\\u0000"}',
]


class HostileReceiver:
    """A loopback server that answers each connection with a mutated hostile answer, then holds or closes it."""

    def __init__(self, rng):
        import threading
        self.rng = random.Random(rng.randrange(1 << 32))
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.settimeout(0.5)
        self.port = self.listener.getsockname()[1]
        self.stopped = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        import threading
        while not self.stopped:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self.answer, args=(connection,), daemon=True).start()

    def answer(self, connection):
        try:
            connection.settimeout(2)
            try:
                connection.recv(65536)
            except OSError:
                pass
            answer = bytearray(self.rng.choice(HOSTILE_ANSWERS))
            if answer and self.rng.random() < 0.3:
                answer[self.rng.randrange(len(answer))] = self.rng.randrange(256)
            connection.sendall(bytes(answer))
            if self.rng.random() < 0.3:
                time.sleep(self.rng.choice([0.5, 3]))  # a body that never ends, held a while
        except OSError:
            pass
        finally:
            connection.close()

    def stop(self):
        self.stopped = True
        self.listener.close()


def start_server(args, contract, extra=()):
    port = free_port()
    server = subprocess.Popen([args.doppel, "serve", contract, "--host", "127.0.0.1", "--port", str(port), "--log-format", "none",
                               "--header-timeout", "2s", "--body-timeout", "2s", "--idle-timeout", "5s", "--socket-idle-timeout", "5s", *extra],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    started = time.monotonic()
    while not health(port, 1):
        if server.poll() is not None or time.monotonic() - started > 30:
            log("FAILURE: doppel serve did not start: " + server.stderr.read().decode("utf-8", "replace")[-2000:])
            sys.exit(1)
        time.sleep(0.1)
    return port, server


def stop_server(server):
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            log("FAILURE: doppel serve did not stop within 10 s of SIGTERM")
            sys.exit(1)


def health_json(port):
    import json
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(b"GET /__doppel/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return json.loads(answer.split(b"\r\n\r\n", 1)[1] or b"{}")


def fuzz_surfaces(args, rng, deadline):
    work = tempfile.mkdtemp(prefix="doppel-fuzz-surfaces-")
    receiver = HostileReceiver(rng)
    servers = []
    try:
        contract = os.path.join(work, "surfaces.yaml")
        with open(contract, "w") as out:
            out.write(SURFACE_CONTRACT)
        port, server = start_server(args, contract)
        servers.append(("in memory", port, server))
        store = os.environ.get("DOPPEL_TEST_POSTGRES")
        if store:
            # Sockets need local state; the stored server gets the stored-text requests.
            stored_contract = os.path.join(work, "stored.yaml")
            with open(stored_contract, "w") as out:
                out.write(SURFACE_CONTRACT.split("  live:")[0] + "  put-item:" + SURFACE_CONTRACT.split("  put-item:")[1])
            stored_port, stored = start_server(args, stored_contract, ["--state-store", store, "--state-namespace", f"fuzz-{args.seed}-{os.getpid()}"])
            servers.append(("state store", stored_port, stored))
        sent = {"frames": 0, "admin": 0, "stored": 0, "runs": 0}
        last = b""
        runners = 0
        while time.monotonic() < deadline:
            choice = rng.random()
            if choice < 0.35:
                data, target = socket_session(rng), port
                sent["frames"] += 1
            elif choice < 0.6:
                data, target = admin_call(rng), rng.choice(servers)[1]
                sent["admin"] += 1
            elif choice < 0.97:
                data, target = stored_text_request(rng, receiver.port), rng.choice(servers)[1]
                sent["stored"] += 1
            else:
                data, target = None, None
            last = data or last
            if data is not None:
                try:
                    with socket.create_connection(("127.0.0.1", target), timeout=3) as connection:
                        connection.sendall(data)
                        # Read what comes for half a second at most (a socket's ticks never stop by themselves).
                        until = time.monotonic() + 0.5
                        try:
                            while time.monotonic() < until:
                                connection.settimeout(max(0.01, until - time.monotonic()))
                                if not connection.recv(65536):
                                    break
                        except OSError:
                            pass
                except OSError:
                    pass
            else:
                # A runner against the hostile receiver as its provider: it ends, 0 or 1, within its bounds.
                runners += 1
                if rng.random() < 0.5:
                    command = [args.doppel, "verify", contract, "--target", f"http://127.0.0.1:{receiver.port}", "--timeout", "1", "--max-requests", "10"]
                else:
                    scenario = os.path.join(work, "hostile-scenario.yaml")
                    with open(scenario, "w") as out:
                        out.write("contract: surfaces.yaml\nsteps:\n  - request: PUT /items/a\n    json: { n: 1 }\n    timeout: 1s\n    expect: { status: 200 }\n"
                                  "  - socket: GET /live\n  - receive: { tick: true }\n    within: 1s\n")
                    command = [args.doppel, "run", scenario, "--target", f"http://127.0.0.1:{receiver.port}"]
                code, output, problem = run_bounded(command, args.hang_seconds, args.max_rss_mib, work)
                if problem:
                    fail("hang or growth", f"{command[1]} against a hostile provider: {problem}", " ".join(command).encode(), ".txt", args.seed)
                if code is not None and code not in (0, 1):
                    fail("crash", f"{command[1]} against a hostile provider exited with {code}: {output[-2000:]}", " ".join(command).encode(), ".txt", args.seed)
            for name, server_port, server in servers:
                if server.poll() is not None:
                    fail("crash", f"doppel serve ({name}) exited with {server.returncode}: " + server.stderr.read().decode("utf-8", "replace")[-2000:],
                         last, ".surfaces", args.seed)
                rss = rss_mib(server.pid) or 0
                if rss > args.max_rss_mib:
                    fail("growth", f"doppel serve ({name}) holds {rss:.0f} MiB (bound {args.max_rss_mib} MiB)", last, ".surfaces", args.seed)
        for name, server_port, server in servers:
            if not health(server_port, args.hang_seconds):
                fail("hang", f"doppel serve ({name}) gave no health answer within {args.hang_seconds} s", last, ".surfaces", args.seed)
            if name == "state store":
                time.sleep(0.5)
                found = health_json(server_port).get("state_store", {})
                if found.get("journal_dropped") or not found.get("reachable"):
                    fail("stored text", f"the replica dropped journal rows or lost the store: {found}", last, ".surfaces", args.seed)
        log(f"surfaces: {sent['frames']} socket sessions, {sent['admin']} admin calls, {sent['stored']} stored-text requests, "
            f"{runners} runner runs against a hostile provider, no crash, hang or growth")
    finally:
        for _, _, server in servers:
            stop_server(server)
        receiver.stop()
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--doppel", required=True, help="the doppel binary to fuzz")
    parser.add_argument("--seconds", type=float, default=180, help="the whole run's time (default 180)")
    parser.add_argument("--seed", type=int, default=None, help="the seed (default: random, printed)")
    parser.add_argument("--hang-seconds", type=float, default=30, help="longer than this is a hang (default 30)")
    parser.add_argument("--max-rss-mib", type=float, default=1024, help="more memory than this is unbounded growth (default 1024)")
    parser.add_argument("--keep-corpus", action="store_true", help="keep inputs with new diagnostics in Fuzz/corpus/documents")
    parser.add_argument("--only", choices=["documents", "http", "surfaces"], help="fuzz one target only")
    args = parser.parse_args()
    args.doppel = os.path.abspath(args.doppel)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 32)
    log(f"seed {args.seed}; {args.seconds:.0f} s")
    rng = random.Random(args.seed)
    start = time.monotonic()
    # Shares of the time: documents 50 %, http 25 %, surfaces 25 % (all of it for one target with --only).
    shares = {"documents": 0.5, "http": 0.25, "surfaces": 0.25} if args.only is None else {args.only: 1.0}
    elapsed = 0.0
    for target, function in [("documents", fuzz_documents), ("http", fuzz_http), ("surfaces", fuzz_surfaces)]:
        if target in shares:
            elapsed += shares[target]
            function(args, rng, start + args.seconds * elapsed)


if __name__ == "__main__":
    main()
