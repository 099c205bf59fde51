"""`doppel serve` on loopback for the client scripts of .ci/: started, waited
for until its health answers, and stopped."""
import contextlib
import socket
import subprocess
import time
import urllib.request


@contextlib.contextmanager
def serving(doppel, contract, port, *extra, health=True):
    """Serves `contract` on 127.0.0.1:`port` while the block runs; without
    `health` (an HTTPS server), waits only until the port takes connections."""
    server = subprocess.Popen(
        [doppel, "serve", str(contract), "--host", "127.0.0.1", "--port", str(port), "--log-format", "none", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            try:
                if health:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/__doppel/health", timeout=2)
                else:
                    socket.create_connection(("127.0.0.1", port), timeout=2).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise SystemExit(f"doppel did not serve {contract} on port {port}")
        yield server
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
