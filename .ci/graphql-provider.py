"""doppel verify against a GraphQL provider nobody here wrote.

Ariadne (PyPI, on graphql-core) serves the demo's schema file
contracts/tales.graphql on loopback, with small in-memory resolvers and a
bearer-token check, as a backend team would write it; `doppel verify
contracts/tales-graphql.yaml` must pass every check against it. Then the
same provider drifts as real ones do: a field gone from the schema (so
the query that selects it fails too), an unknown story id answered with an
error instead of null, and no auth; verify must fail exactly those checks.

Usage: python3 .ci/graphql-provider.py DOPPEL
"""
import contextlib
import pathlib
import re
import subprocess
import sys
import threading
import time
import urllib.request

import uvicorn
from ariadne import MutationType, ObjectType, QueryType, make_executable_schema
from ariadne.asgi import GraphQL
from graphql import GraphQLError
from starlette.responses import JSONResponse

ROOT = pathlib.Path(__file__).resolve().parent.parent
PORT = 18991


def app(drifted):
    sdl = (ROOT / "contracts/tales.graphql").read_text()
    if drifted:
        # A field the contract documents, gone.
        sdl = sdl.replace("  monthlyLimit: Int!\n", "")
    query, mutation = QueryType(), MutationType()
    children, stories = {}, {}

    @query.field("me")
    def me(*_):
        usage = {"storiesUsed": len(stories), "monthlyLimit": 5, "resetDate": "2026-12-01T00:00:00Z"}
        return {"plan": "FREE", "subscription": usage}

    @query.field("children")
    def list_children(*_):
        return list(children.values())

    @query.field("story")
    def story(*_, id):
        if id not in stories and drifted:
            raise GraphQLError(f"no story {id}", extensions={"code": "NOT_FOUND"})
        return stories.get(id)

    @query.field("stories")
    def list_stories(*_):
        return list(stories.values())

    @query.field("plans")
    def plans(*_):
        return [{"tier": "FREE", "displayName": "Free", "monthlyStories": 5, "monthlyPrice": 0.0}]

    @mutation.field("createChild")
    def create_child(*_, input):
        child = {"id": f"child_{len(children) + 1}", "interests": [], **input}
        children[child["id"]] = child
        return child

    child = ObjectType("Child")
    child.set_field("stories", lambda parent, *_: [s for s in stories.values() if s["childId"] == parent["id"]])
    story_type = ObjectType("Story")
    story_type.set_field("child", lambda parent, *_: children.get(parent["childId"]))
    graphql = GraphQL(make_executable_schema(sdl, query, mutation, child, story_type))

    async def served(scope, receive, send):
        if scope["type"] == "http" and not drifted:
            headers = dict(scope.get("headers") or [])
            if not headers.get(b"authorization", b"").startswith(b"Bearer "):
                body = {"errors": [{"message": "Not authenticated", "extensions": {"code": "UNAUTHENTICATED"}}]}
                await JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)
                return
        await graphql(scope, receive, send)

    return served


@contextlib.contextmanager
def provider(drifted):
    server = uvicorn.Server(uvicorn.Config(app(drifted), host="127.0.0.1", port=PORT, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(100):
        try:
            urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{PORT}/", method="OPTIONS"), timeout=2)
            break
        except urllib.error.HTTPError:
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def verify(doppel):
    run = subprocess.run(
        [doppel, "verify", str(ROOT / "contracts/tales-graphql.yaml"), "--target", f"http://127.0.0.1:{PORT}", "--token", "provider-token"],
        capture_output=True, text=True, timeout=120)
    return run.returncode, run.stdout + run.stderr


def main() -> int:
    doppel = sys.argv[1]
    with provider(drifted=False):
        code, output = verify(doppel)
    assert code == 0, f"verify of the provider that keeps the contract failed:\n{output}"
    assert re.search(r"^\d+ passed, 0 failed", output, re.M), output
    assert "ok   graphql: schema by introspection" in output and "ok   graphql: no credentials: refused with 401" in output, output
    assert "ok   Query.story: valid query, unknown id: story answered null" in output, output

    with provider(drifted=True):
        code, output = verify(doppel)
    assert code == 1, f"verify of the drifted provider passed:\n{output}"
    failed = sorted(line.split(":")[0].split()[1] + ": " + line.split(":")[1].strip() for line in output.splitlines() if line.startswith("FAIL"))
    expected = sorted([
        "graphql: schema by introspection",
        "Query.me: valid query",
        "Query.story: valid query, unknown id",
        "graphql: no credentials",
    ])
    assert failed == expected, f"{failed} != {expected}\n{output}"
    assert "breaking: " in output and "Usage.monthlyLimit" in output, output
    assert "a code the contract does not give Query.story" in output and "NOT_FOUND" in output, output
    print("graphql provider: doppel verify passes an Ariadne provider that keeps the contract, and fails each drift of one that does not")
    return 0


if __name__ == "__main__":
    sys.exit(main())
