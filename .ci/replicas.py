"""Two `doppel serve --state-store` replicas behind nginx, used by clients
nobody here wrote: Python's `websockets` (PyPI) for the sockets, urllib for
HTTP, nginx (Debian) as the balancer with the configuration
docs/shared-state.md shows.

contracts/realtime-demo.yaml is served by both replicas on one PostgreSQL.
Four sockets of one session open through the balancer, which places them
on both replicas. Then:

- each socket sends five `subscribe` messages at once: the session's topic
  list, written by rules on two replicas, holds all twenty, and the
  `topics` counts the sockets were answered with are 1 to 20, each once;
- four stories asked through the balancer: the fourth is the 402, and every
  socket, whichever replica holds it, gets each `story_ready` once and the
  `limit_reached` once;
- one replica is killed (SIGKILL): its sockets end without a close frame
  (1006); the other's sockets still answer, a purchase asked through the
  balancer is completed by its webhook and pushed to them, and the session
  has lost nothing.

Usage: python3 .ci/replicas.py DOPPEL POSTGRES_URL
"""
import asyncio
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / ".ci"))
from doppel_serving import serving  # noqa: E402

BALANCER = 18990
REPLICAS = (18991, 18992)
SESSION = "ci-team"
HEADERS = {"Authorization": "Bearer ci", "Doppel-Session": SESSION}

NGINX = """
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy; fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;
    map $http_upgrade $connection_upgrade {{ default upgrade; "" ""; }}
    upstream doppel {{ server 127.0.0.1:{a}; server 127.0.0.1:{b}; keepalive 64; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://doppel; proxy_http_version 1.1; proxy_set_header Host $http_host;
            proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection $connection_upgrade;
            proxy_read_timeout 1h;
        }}
    }}
}}
"""


def http(method, path, body=None, port=BALANCER):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={**HEADERS, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer) if answer.length != 0 else None
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def check(condition, message):
    if not condition:
        raise SystemExit(f"replicas: {message}")


async def receive(socket, count, seconds=15):
    """The next `count` messages of `socket`, as JSON."""
    return [json.loads(await asyncio.wait_for(socket.recv(), seconds)) for _ in range(count)]


def sockets_open(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/__doppel/health", timeout=5) as answer:
        return json.load(answer)["sockets"]["open"]


async def run(doppel, store):
    namespace = f"ci-replicas-{os.getpid()}"
    extra = ["--state-store", store, "--state-namespace", namespace, "--state-store-timeout", "10s"]
    contract = ROOT / "contracts/realtime-demo.yaml"
    with serving(doppel, contract, REPLICAS[0], *extra), serving(doppel, contract, REPLICAS[1], *extra) as doomed, \
            tempfile.TemporaryDirectory() as folder:
        pathlib.Path(folder, "nginx.conf").write_text(NGINX.format(dir=folder, a=REPLICAS[0], b=REPLICAS[1], port=BALANCER))
        nginx = subprocess.Popen(["nginx", "-p", folder, "-c", f"{folder}/nginx.conf", "-g", "daemon off;"])
        try:
            for _ in range(100):
                try:
                    http("GET", "/__doppel/health")
                    break
                except OSError:
                    await asyncio.sleep(0.1)
            sockets = [await connect(f"ws://127.0.0.1:{BALANCER}/v1/live", additional_headers=HEADERS) for _ in range(4)]
            for socket in sockets:
                welcome = (await receive(socket, 1))[0]
                check(welcome["type"] == "welcome", f"a socket opened with {welcome}")
            held = [sockets_open(port) for port in REPLICAS]
            check(held == [2, 2], f"the balancer placed the sockets {held} over the replicas, not on both")

            # Rules on two replicas write one session's list: twenty topics, each count answered once.
            async def subscribe(index, socket):
                for k in range(5):
                    await socket.send(json.dumps({"type": "subscribe", "topic": f"s{index}-{k}"}))
                return [message["topics"] for message in await receive(socket, 5)]
            counts = sorted(sum(await asyncio.gather(*(subscribe(i, s) for i, s in enumerate(sockets))), []))
            check(counts == list(range(1, 21)), f"the sockets were answered with topic counts {counts}")
            status, listed = http("GET", "/v1/subscriptions")
            check(status == 200 and len(listed["topics"]) == 20, f"the session lists {listed}")

            # Pushes made on either replica reach every socket on both, each once.
            statuses = [http("POST", "/v1/stories", {"title": f"tale {n}"})[0] for n in range(4)]
            check(statuses == [202, 202, 202, 402], f"four stories were answered {statuses}")
            for socket in sockets:
                got = await receive(socket, 4)
                kinds = sorted((m["type"], m.get("id", "")) for m in got)
                want = [("limit_reached", ""), ("story_ready", "st_1"), ("story_ready", "st_2"), ("story_ready", "st_3")]
                check(kinds == want, f"a socket got {got}")
            for socket in sockets:
                await socket.send(json.dumps({"type": "ping"}))
                check((await receive(socket, 1))[0] == {"type": "pong"}, "a socket did not answer a ping before the kill")

            # One replica killed: its sockets end without a close frame; the other serves on.
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(timeout=10)
            dropped, alive = 0, []
            for socket in sockets:
                try:
                    await socket.send(json.dumps({"type": "ping"}))
                    message = json.loads(await asyncio.wait_for(socket.recv(), 10))
                    check(message == {"type": "pong"}, f"a surviving socket answered {message}")
                    alive.append(socket)
                except ConnectionClosed as closed:
                    check(closed.rcvd is None, f"a killed replica's socket got a close frame {closed.rcvd}")
                    dropped += 1
            check(dropped == 2 and len(alive) == 2, f"{dropped} sockets dropped and {len(alive)} answered after the kill")
            status, purchase = http("POST", "/v1/purchases", {"plan": "premium"})
            check(status == 202, f"a purchase after the kill was answered {status} {purchase}")
            for socket in alive:
                completed = (await receive(socket, 1))[0]
                check(completed == {"type": "purchase_completed", "id": purchase["id"], "plan": "premium"}, f"a socket got {completed}")
            status, listed = http("GET", "/v1/subscriptions")
            check(status == 200 and len(listed["topics"]) == 20, f"after the kill the session lists {listed}")
            check(http("GET", "/v1/subscription")[1] == {"plan": "premium"}, "the webhook's plan is not the session's")
            for socket in alive:
                await socket.close()
        finally:
            nginx.send_signal(signal.SIGQUIT)
            try:
                nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                nginx.kill()
    print("replicas: 4 sockets over 2 replicas behind nginx: 20 topics written by rules on both, each story and the 402 pushed to every "
          "socket once; a replica killed dropped its 2 sockets (no close frame) and the other served the session on")


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1], sys.argv[2]))
