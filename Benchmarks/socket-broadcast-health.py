#!/usr/bin/env python3
"""How long `GET /__doppel/health` takes while a contract broadcasts to many
WebSockets, every message a line of the text request log.

    python3 Benchmarks/socket-broadcast-health.py --doppel BINARY [--sockets 48] [--every 10ms] [--seconds 20] [--terminal]

A contract whose socket sends a message every `--every` to each of
`--sockets` sockets (48 × 100 a second: 4,800 log lines a second), served
with `--log-format text` into a pipe this script reads; health is asked
once every 100 ms, and its latencies are printed as median, p90 and max.
Run two builds alternately, several times, on one machine: absolute
numbers depend on the machine's load, the comparison does not.
"""
import argparse
import os
import socket
import statistics
import subprocess
import shutil
import sys
import tempfile
import threading
import time

CONTRACT = """doppel: 1
endpoints:
  feed:
    request: GET /feed
    websocket:
      every:
        - {{ name: tick, interval: {every}, send: {{ tick: true }} }}
"""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def cpu_seconds(pid):
    """User and system time the process has used, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def health(port):
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
        connection.sendall(b"GET /__doppel/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        while connection.recv(65536):
            pass
    return time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--doppel", required=True)
    parser.add_argument("--sockets", type=int, default=48)
    parser.add_argument("--every", default="10ms")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--terminal", action="store_true", help="standard output a pseudo-terminal rather than a pipe")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="doppel-broadcast-")
    contract = os.path.join(work, "broadcast.yaml")
    with open(contract, "w") as out:
        out.write(CONTRACT.format(every=args.every))
    port = free_port()
    lines = [0]
    if args.terminal:
        # Standard output a terminal, as when doppel serve runs in one: each write costs a pty's line discipline.
        import pty
        master, slave = pty.openpty()
        server = subprocess.Popen([args.doppel, "serve", contract, "--port", str(port), "--log-format", "text"],
                                  stdout=slave, stderr=subprocess.DEVNULL)
        os.close(slave)
        reader = os.fdopen(master, "rb", buffering=0)
    else:
        server = subprocess.Popen([args.doppel, "serve", contract, "--port", str(port), "--log-format", "text"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        reader = server.stdout

    def drain():  # read as fast as it comes: the log's own cost, not a stalled reader's
        try:
            while chunk := reader.read(65536):
                lines[0] += chunk.count(b"\n")
        except OSError:
            pass
    threading.Thread(target=drain, daemon=True).start()
    sockets = []
    try:
        for _ in range(100):
            try:
                health(port)
                break
            except OSError:
                time.sleep(0.1)
        for index in range(args.sockets):
            connection = socket.create_connection(("127.0.0.1", port), timeout=10)
            connection.sendall(f"GET /feed HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                               f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nDoppel-Session: b{index}\r\n\r\n".encode())
            assert connection.recv(4096).startswith(b"HTTP/1.1 101"), "the upgrade was refused"
            sockets.append(connection)

        def read(connection):  # every socket's messages taken, as a client would
            try:
                while connection.recv(65536):
                    pass
            except OSError:
                pass
        for connection in sockets:
            threading.Thread(target=read, args=(connection,), daemon=True).start()
        time.sleep(1)
        latencies = []
        cpu_before = cpu_seconds(server.pid)
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            latencies.append(health(port))
            time.sleep(0.1)
        cpu = cpu_seconds(server.pid) - cpu_before
        latencies.sort()
        p90 = latencies[int(len(latencies) * 0.9)]
        print(f"{args.doppel}: health over {len(latencies)} calls: "
              f"median {statistics.median(latencies) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms; "
              f"{lines[0] / (args.seconds + 1):.0f} log lines a second; the server used {cpu / args.seconds * 100:.0f} % of a core")
    finally:
        for connection in sockets:
            connection.close()
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
