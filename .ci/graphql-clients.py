"""The bundled GraphQL contract used by clients nobody here wrote.

Serves contracts/tales-graphql.yaml with `doppel serve` on loopback and
uses it with `gql` (PyPI) over HTTP, each case in its own Doppel session:
the schema fetched by introspection builds, with graphql-core, the same
schema as the SDL file (printed schemas compared); queries; a mutation and
a query that reads it back in the same session and not in another; the
child and monthly limits as errors with their `extensions` (the quota's
`limit_info`); a query the server refuses by validation, and one past the
depth bound; the 401 without a token; a subscription over WebSocket
(graphql-transport-ws) that hears each story a mutation generates in its
session, in order, and a query sent over the same socket. Plain HTTP too: GET for a query, a
mutation refused over GET with 405, and both response media types. Then
Schemathesis fuzzes the door against the contract's OpenAPI export.

Usage: python3 .ci/graphql-clients.py DOPPEL
"""
import asyncio
import json
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from gql import Client, gql
from gql.transport.exceptions import TransportQueryError
from gql.transport.requests import RequestsHTTPTransport
from gql.transport.websockets import WebsocketsTransport
from graphql import build_client_schema, build_schema, get_introspection_query, lexicographic_sort_schema, print_schema

from doppel_serving import serving

ROOT = pathlib.Path(__file__).resolve().parent.parent
PORT = 18987
URL = f"http://127.0.0.1:{PORT}/graphql"


def client(session, token="parent-token", schema=True):
    headers = {"Doppel-Session": session}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    transport = RequestsHTTPTransport(url=URL, headers=headers, timeout=10, retries=0)
    return Client(transport=transport, fetch_schema_from_transport=schema)


def refused(session, query, variables=None):
    """The errors of an operation that the server answers with errors only."""
    try:
        session.execute(gql(query), variable_values=variables)
    except TransportQueryError as error:
        return error.errors
    raise AssertionError(f"expected errors for {query}")


def http(method, query, accept, body=None, token="t"):
    url = URL if body is not None else URL + "?query=" + urllib.request.quote(query)
    headers = {"Accept": accept, "Content-Type": "application/json", "Doppel-Session": "http"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, method=method, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read())


async def subscription():
    """gql's WebSocket transport (graphql-transport-ws): stories generated over HTTP reach the subscriber, in order."""
    headers = {"Doppel-Session": "live", "Authorization": "Bearer parent-token"}
    socket = WebsocketsTransport(url=f"ws://127.0.0.1:{PORT}/graphql", headers=headers, subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL])
    async with Client(transport=socket, fetch_schema_from_transport=True) as session:
        def generate():
            # Once the server has opened the subscription (its journal says so), three stories over HTTP.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/__doppel/journal?session=live", timeout=10) as answer:
                    entries = json.loads(answer.read())["entries"]
                if any(entry.get("method") == "SEND" and entry.get("response") == "subscribe" for entry in entries):
                    break
                time.sleep(0.05)
            with client("live") as http:
                child = http.execute(gql("mutation { createChild(input: {name: \"Ivy\", ageCategory: AGES_6_7}) { id } }"))["createChild"]["id"]
                for _ in range(3):
                    http.execute(gql("mutation($c: ID!) { generateStory(input: {childId: $c}) { id } }"), variable_values={"c": child})
        sender = asyncio.create_task(asyncio.to_thread(generate))
        heard = []
        async for event in session.subscribe(gql("subscription { storyReady { id title child { name } } }")):
            heard.append(event["storyReady"])
            if len(heard) == 3:
                break
        await sender
        assert heard == [{"id": f"story_{n}", "title": "Ivy and the Magic Garden", "child": {"name": "Ivy"}} for n in (1, 2, 3)], heard
        # A query over the same socket reads the session's state.
        me = await session.execute(gql("{ me { subscription { storiesUsed } } }"))
        assert me == {"me": {"subscription": {"storiesUsed": 3}}}, me


def main() -> int:
    doppel = sys.argv[1]
    with serving(doppel, ROOT / "contracts/tales-graphql.yaml", PORT):
        # Introspection: graphql-core builds the SDL file's schema back.
        introspected = client("introspection", schema=False).execute(gql(get_introspection_query(descriptions=True)))
        # (Sorted: the order of types and fields in an introspection answer is the server's own.)
        served = print_schema(lexicographic_sort_schema(build_client_schema(introspected)))
        written = print_schema(lexicographic_sort_schema(build_schema((ROOT / "contracts/tales.graphql").read_text())))
        assert served == written, f"introspection differs from the SDL:\n{served}\n---\n{written}"

        with client("family") as family:
            me = family.execute(gql("{ me { plan subscription { storiesUsed monthlyLimit } } }"))
            assert me == {"me": {"plan": "FREE", "subscription": {"storiesUsed": 0, "monthlyLimit": 5}}}, me
            # Two children, then the free plan's limit as an error with its code.
            add = gql("mutation Add($name: String!) { createChild(input: {name: $name, ageCategory: AGES_4_5}) { id name } }")
            ids = [family.execute(add, variable_values={"name": name})["createChild"]["id"] for name in ("Mia", "Leo")]
            assert ids == ["child_1", "child_2"], ids
            errors = refused(family, "mutation { createChild(input: {name: \"Ada\", ageCategory: AGES_2_3}) { id } }")
            assert errors[0]["extensions"]["code"] == "CHILD_LIMIT_EXCEEDED", errors
            assert errors[0]["path"] == ["createChild"], errors

            # Five stories, read back in this session; the sixth is the quota's error with limit_info.
            generate = gql("mutation Gen($child: ID!) { generateStory(input: {childId: $child, language: RU}) { id title child { name } } }")
            for n in range(1, 6):
                story = family.execute(generate, variable_values={"child": "child_1"})["generateStory"]
                assert story == {"id": f"story_{n}", "title": "Mia и волшебный сад", "child": {"name": "Mia"}}, story
            errors = refused(family, "mutation { generateStory(input: {childId: \"child_2\"}) { id } }")
            extensions = errors[0]["extensions"]
            assert extensions["code"] == "MONTHLY_LIMIT_EXCEEDED", errors
            assert extensions["limit_info"]["monthly_limit"] == 5 and extensions["limit_info"]["stories_used"] == 5, extensions
            assert extensions["limit_info"]["current_plan"] == "free", extensions
            read = family.execute(gql("{ story(id: \"story_3\") { id language child { stories { id } } } me { subscription { storiesUsed } } }"))
            assert read["story"]["language"] == "RU" and len(read["story"]["child"]["stories"]) == 5, read
            assert read["me"]["subscription"]["storiesUsed"] == 5, read

        with client("neighbour") as neighbour:
            # Another session has none of it.
            other = neighbour.execute(gql("{ story(id: \"story_3\") { id } children { id } }"))
            assert other == {"story": None, "children": []}, other

        # Refused by the server (no local schema to check against first): validation and the depth bound.
        with client("invalid", schema=False) as plain:
            errors = refused(plain, "{ me { plan nope } }")
            # (gql sends the document printed, one field a line: `nope` is on line 4.)
            assert "nope" in errors[0]["message"] and errors[0]["locations"] == [{"line": 4, "column": 5}], errors
            deep = "id"
            for _ in range(10):
                deep = "stories { child { " + deep + " } }"
            deep = "{ children { " + deep + " } }"
            errors = refused(plain, deep)
            assert errors[0]["extensions"]["code"] == "DEPTH_LIMIT_EXCEEDED", errors

        # Without a token the operation is refused as a whole: 401, with a GraphQL body gql reads as errors.
        errors = refused(client("anonymous", token=None, schema=False), "{ me { plan } }")
        assert errors == [{"message": "Not authenticated", "extensions": {"code": "UNAUTHENTICATED"}}], errors
        status, headers, _ = http("POST", "", "application/json", json.dumps({"query": "{ me { plan } }"}).encode(), token=None)
        assert status == 401 and headers["WWW-Authenticate"] == "Bearer", (status, headers)

        asyncio.run(asyncio.wait_for(subscription(), 60))

        # GraphQL over HTTP: GET for a query; a mutation over GET is 405; the two media types.
        status, headers, body = http("GET", "{ me { plan } }", "application/graphql-response+json")
        assert status == 200 and body == {"data": {"me": {"plan": "FREE"}}}, (status, body)
        assert headers["Content-Type"].startswith("application/graphql-response+json"), headers
        status, headers, body = http("GET", "mutation { createChild(input: {name: \"X\", ageCategory: AGES_2_3}) { id } }", "application/json")
        assert status == 405 and headers["Allow"] == "POST", (status, body)
        status, _, body = http("POST", "", "application/graphql-response+json", json.dumps({"query": "{ me { nope } }"}).encode())
        assert status == 400 and "data" not in body, (status, body)
        status, _, body = http("POST", "", "application/json", json.dumps({"query": "{ me { nope } }"}).encode())
        assert status == 200 and "data" not in body, (status, body)
        # Schemathesis fuzzes the door against the contract's export (GraphQL over HTTP as OpenAPI says it):
        # no server error, and every status, media type and body as the export documents them.
        with tempfile.TemporaryDirectory() as folder:
            export = pathlib.Path(folder) / "tales-graphql.json"
            subprocess.run([doppel, "export", str(ROOT / "contracts/tales-graphql.yaml"), "-o", str(export)], check=True)
            subprocess.run(["schemathesis", "run", str(export), "--url", f"http://127.0.0.1:{PORT}/", "-H", "Authorization: Bearer t",
                            "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
                            "--max-examples", "50", "--seed", "1", "--no-color"], check=True, timeout=300)
    print("graphql clients: introspection, queries, mutations per session, documented errors, a subscription, bounds and HTTP forms passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
