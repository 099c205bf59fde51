"""`doppel mcp` and `/__doppel/mcp` driven by a real client nobody here wrote.

Over stdio: starts `doppel mcp contracts/tales.yaml --port PORT` as the official MCP
Python SDK (`mcp` from PyPI) starts a stdio server, and acts as an agent
beside a client under test: it lists the tools, forces the session's next
generate to its documented 402, sees an HTTP client in its session (the
header `Doppel-Session`) get that 402 with the session's `limit_info`,
reads why from `explain`, and checks that a call with bad input is an
error result that changes nothing.

Over Streamable HTTP: serves tales.yaml with `doppel serve --admin-token`,
refuses the MCP endpoint without the token, and connects two agents at
once: each works in a Doppel session of its own, so the 402 one forces is
not what the other's request gets, and neither's `explain` lists the
other's answers.

A contract's own MCP server: serves contracts/mcp-todo.yaml (an `mcp:`
section) and uses it as an agent would, in two Doppel sessions at once:
the sixth add_task of one is the documented quota error (isError, with
its structured content) while the other's is added; arguments that break
the input schema and an unknown tool are JSON-RPC errors; the journal
counts each tool call by its endpoint, `mcp.add_task`. Then the same
server over stdio, `doppel serve --stdio`, started by the SDK.

Usage: python3 .ci/mcp-clients.py DOPPEL
"""
import asyncio
import json
import pathlib
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

ROOT = pathlib.Path(__file__).resolve().parent.parent
PORT = 18982
HTTP_PORT = 18984
ADMIN_TOKEN = "ci-admin-token"
SESSION = "ci-agent"
TOKEN = ("Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIzZjJiOGMxZS03ZDRhLTRlNTktOWIxYy0yYTZmMGU4ZDRjNzEiLC"
         "Jyb2xlIjoiYXV0aGVudGljYXRlZCJ9.c2lnbmF0dXJl")


def generate_over_http():
    """The client under test: one generate request in the agent's session, over HTTP."""
    body = json.dumps({"language": "ru", "child_id": "123e4567-e89b-12d3-a456-426614174000", "story_type": "child"}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{PORT}/api/v1/stories/generate", data=body, method="POST",
        headers={"Authorization": TOKEN, "Content-Type": "application/json", "Doppel-Session": SESSION})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def wait_for_http(port=PORT, token=None):
    headers = {"Doppel-Admin-Token": token} if token else {}
    for _ in range(100):
        try:
            urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/__doppel/health", headers=headers), timeout=2)
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"doppel did not serve HTTP on port {port}")


def follow_events(seen):
    """Reads the --port server's event stream into `seen` (event names), until the process ends."""
    answer = urllib.request.urlopen(f"http://127.0.0.1:{PORT}/__doppel/events?session={SESSION}", timeout=30)
    for line in answer:
        text = line.decode().strip()
        if text.startswith("event:"):
            seen.append(text.split(":", 1)[1].strip())


def field(value, name, older):
    """A result's field: the SDK's current snake_case name, or its older camelCase one."""
    return getattr(value, name) if hasattr(value, name) else getattr(value, older)


def is_error(result):
    return field(result, "is_error", "isError")


def structured(result):
    assert not is_error(result), result
    return field(result, "structured_content", "structuredContent")


async def over_stdio():
    params = StdioServerParameters(
        command=sys.argv[1], args=["mcp", str(ROOT / "contracts/tales.yaml"), "--session", SESSION, "--port", str(PORT)])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            for name in ("list_endpoints", "send_request", "explain", "force_next", "clock", "coverage", "verify"):
                assert name in tools, f"no {name} tool: {sorted(tools)}"
                schema = field(tools[name], "input_schema", "inputSchema")
                assert schema["type"] == "object", schema
            endpoints = structured(await session.call_tool("list_endpoints", {}))
            assert any(route["id"] == "generate-story" for route in endpoints["routes"]), endpoints
            print(f"{len(tools)} tools, {len(endpoints['routes'])} endpoints")

            wait_for_http()
            seen = []
            threading.Thread(target=follow_events, args=(seen,), daemon=True).start()
            for _ in range(100):
                if "ready" in seen:
                    break
                await asyncio.sleep(0.05)

            forced = structured(await session.call_tool("force_next", {"endpoint": "generate-story", "status": 402}))
            assert forced["session"] == SESSION and len(forced["waiting"]) == 1, forced
            # The tools take the HTTP server's path: its event stream tells of the change.
            for _ in range(100):
                if "state" in seen:
                    break
                await asyncio.sleep(0.05)
            assert "state" in seen, seen
            status, body = await asyncio.to_thread(generate_over_http)
            assert status == 402, (status, body)
            assert body["error_code"] == "MONTHLY_LIMIT_EXCEEDED" and body["limit_info"]["current_plan"] == "free", body
            print("the client under test got the forced 402 with limit_info:", body["limit_info"])

            explained = structured(await session.call_tool("explain", {"endpoint": "generate-story"}))
            last = explained["entries"][-1]
            assert last["status"] == 402 and "forced" in last["reason"], last
            print("explain:", last["reason"])

            resources = {resource.uri for resource in (await session.list_resources()).resources}
            assert resources == {"doppel://contract", "doppel://contract/openapi", "doppel://session/state"}, resources
            read = await session.read_resource("doppel://session/state")
            assert json.loads(read.contents[0].text)["session"] == SESSION, read
            exported = json.loads((await session.read_resource("doppel://contract/openapi")).contents[0].text)
            assert exported["openapi"].startswith("3.1") and exported["paths"], list(exported)
            linted = structured(await session.call_tool("lint", {"text": "doppel: 1\nendpoints:\n  x: { request: FETCH /x }\n"}))
            assert not linted["valid"] and linted["problems"][0]["line"] == 3, linted
            print("resources:", sorted(resources), "; lint:", linted["problems"][0]["text"])
            scenario = ("headers: { Authorization: " + json.dumps(TOKEN) + " }\n"
                        "overrides: [ { endpoint: list-free-stories, call: 1, response: { status: 503, body: { detail: busy } } } ]\n"
                        "steps:\n"
                        "  - { request: GET /api/v1/free-stories, expect: { status: 503, body: { detail: busy } } }\n"
                        "  - { request: GET /api/v1/free-stories, expect: { status: 201 } }\n")
            ran = structured(await session.call_tool("run_scenario", {"text": scenario, "session": "ci-scenario"}))
            outcomes = [step["outcome"] for step in ran["steps"]]
            assert not ran["passed"] and outcomes == ["passed", "failed"], ran
            assert ran["steps"][1]["details"][0].startswith("status: expected 201, got 200"), ran
            print("run_scenario:", ran["steps"][1]["details"][0])

            before = structured(await session.call_tool("get_state", {}))
            bad = await session.call_tool("force_next", {"endpoint": "generate-story", "status": "402", "sesion": "x"})
            assert is_error(bad), bad
            message = bad.content[0].text
            assert "sesion" in message, message
            assert structured(await session.call_tool("get_state", {})) == before
            waiting = json.load(urllib.request.urlopen(f"http://127.0.0.1:{PORT}/__doppel/next?session={SESSION}", timeout=5))
            assert waiting["waiting"] == [], waiting
            print("bad input:", message)


GENERATE = {
    "method": "POST", "path": "/api/v1/stories/generate", "headers": {"Authorization": TOKEN},
    "body": {"language": "ru", "child_id": "123e4567-e89b-12d3-a456-426614174000", "story_type": "child"},
}


async def agent(url, forces, ready, done):
    """One agent over Streamable HTTP; returns its session and what its generate got."""
    client = create_mcp_http_client(headers={"Doppel-Admin-Token": ADMIN_TOKEN})
    async with client, streamable_http_client(url, http_client=client) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            state = structured(await session.call_tool("get_state", {}))
            if forces:
                structured(await session.call_tool("force_next", {"endpoint": "generate-story", "status": 402}))
            ready.set()
            # Both agents are connected, and one has forced its answer, before either sends.
            await asyncio.wait_for(done.wait(), 30)
            sent = structured(await session.call_tool("send_request", GENERATE))
            seen = structured(await session.call_tool("explain", {}))["entries"]
            return state["session"], sent, seen


async def over_http(doppel):
    url = f"http://127.0.0.1:{HTTP_PORT}/__doppel/mcp"
    server = await asyncio.create_subprocess_exec(
        doppel, "serve", str(ROOT / "contracts/tales.yaml"), "--port", str(HTTP_PORT), "--admin-token", ADMIN_TOKEN,
        "--log-format", "none", stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await asyncio.to_thread(wait_for_http, HTTP_PORT, ADMIN_TOKEN)
        try:
            urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST", headers={"Content-Type": "application/json"}), timeout=5)
            raise SystemExit("/__doppel/mcp answered without the admin token")
        except urllib.error.HTTPError as error:
            assert error.code == 401, error.code
        first_ready, second_ready, go = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def release():
            await asyncio.wait_for(asyncio.gather(first_ready.wait(), second_ready.wait()), 30)
            go.set()

        (first, second, _) = await asyncio.gather(
            agent(url, True, first_ready, go), agent(url, False, second_ready, go), release())
        assert first[0] != second[0], (first[0], second[0])
        assert first[1]["status"] == 402 and first[1]["body"]["limit_info"], first[1]
        assert second[1]["status"] == 404, second[1]
        assert [entry["session"] for entry in first[2]] == [first[0]], first[2]
        assert [entry["session"] for entry in second[2]] == [second[0]], second[2]
        print(f"over HTTP: {first[0]} got its forced 402, {second[0]} the contract's 404; each explain lists its own answer only")
    finally:
        server.terminate()
        await server.wait()


TODO_PORT = 18986


async def todo_agent(session_id, adds):
    """Adds `adds` tasks in a Doppel session of its own; the results, and the protocol errors it provokes."""
    async with create_mcp_http_client(headers={"Doppel-Session": session_id}) as http:
        async with streamable_http_client(f"http://127.0.0.1:{TODO_PORT}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                started = await session.initialize()
                assert started.server_info.name == "doppel-todo", started
                tools = [tool.name for tool in (await session.list_tools()).tools]
                assert tools == ["add_task", "list_tasks", "complete_task"], tools
                results = [await session.call_tool("add_task", {"title": f"task {n}"}) for n in range(adds)]
                errors = []
                for name, arguments in (("add_task", {"title": 5}), ("no_such_tool", {})):
                    try:
                        await session.call_tool(name, arguments)
                        raise AssertionError(f"{name} {arguments} was answered")
                    except Exception as error:  # the SDK's McpError
                        errors.append(getattr(getattr(error, "error", None), "code", None))
                listed = structured(await session.call_tool("list_tasks", {}))["tasks"]
                return results, errors, listed


async def contract_server(doppel):
    server = await asyncio.create_subprocess_exec(
        doppel, "serve", str(ROOT / "contracts/mcp-todo.yaml"), "--port", str(TODO_PORT), "--log-format", "none",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await asyncio.to_thread(wait_for_http, TODO_PORT)
        (full, _, listed), (other, errors, other_listed) = await asyncio.gather(todo_agent("todo-a", 6), todo_agent("todo-b", 1))
        assert [is_error(result) for result in full] == [False] * 5 + [True], full
        quota = field(full[5], "structured_content", "structuredContent")
        assert quota == {"error": "quota_exceeded", "limit": 5, "tasks": 5}, quota
        assert full[5].content[0].text.startswith("Task limit reached"), full[5]
        assert len(listed) == 5 and len(other_listed) == 1, (listed, other_listed)
        assert not is_error(other[0]) and structured(other[0])["id"] == "t1", other
        assert errors == [-32602, -32602], errors
        journal = json.load(urllib.request.urlopen(f"http://127.0.0.1:{TODO_PORT}/__doppel/journal?session=todo-a", timeout=5))
        calls = [entry for entry in journal["entries"] if entry["endpoint"] == "mcp.add_task"]
        assert len(calls) == 7 and calls[-1]["status"] == 400, calls  # six adds and the bad arguments
        print(f"contract MCP server: 5 tasks added and the sixth refused as documented in one session, 1 in the other; "
              f"protocol errors {errors}; the journal counts {len(calls)} add_task calls")
    finally:
        server.terminate()
        await server.wait()
    # The same server over stdio: `doppel serve --stdio`, started by the SDK as an agent starts a tool server.
    params = StdioServerParameters(command=doppel, args=["serve", str(ROOT / "contracts/mcp-todo.yaml"), "--port", "0", "--stdio", "--log-format", "none"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            started = await session.initialize()
            assert started.server_info.name == "doppel-todo", started
            results = [await session.call_tool("add_task", {"title": f"task {n}"}) for n in range(6)]
            assert [is_error(result) for result in results] == [False] * 5 + [True], results
            listed = structured(await session.call_tool("list_tasks", {}))["tasks"]
            assert [task["id"] for task in listed] == ["t1", "t2", "t3", "t4", "t5"], listed
    print("contract MCP server over stdio (doppel serve --stdio): the sixth add_task refused as documented")
    # A line over --max-body-size is refused as over HTTP, and the next line is answered.
    oversized = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "add_task", "arguments": {"title": "x" * 2000}}})
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    answered = subprocess.run(
        [doppel, "serve", str(ROOT / "contracts/mcp-todo.yaml"), "--port", "0", "--stdio", "--max-body-size", "1KiB"],
        input=oversized + "\n" + ping + "\n", capture_output=True, text=True, timeout=60)
    lines = [json.loads(line) for line in answered.stdout.splitlines()]
    assert answered.returncode == 0 and len(lines) == 2, (answered.returncode, answered.stdout, answered.stderr[-500:])
    assert lines[0]["error"]["code"] == -32600 and "1024" in lines[0]["error"]["message"], lines[0]
    assert lines[1] == {"jsonrpc": "2.0", "id": 2, "result": {}}, lines[1]
    print("doppel serve --stdio:", lines[0]["error"]["message"])


async def main() -> int:
    await over_stdio()
    await over_http(sys.argv[1])
    await contract_server(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
