"""The bundled LLM chat contract read by the official OpenAI Python SDK.

Serves contracts/llm-chat.yaml with `doppel serve` on loopback and uses it
with `openai` from PyPI, each case in its own Doppel session: a completion
with its usage; a stream read to `[DONE]` whose deltas join to the answer
and whose usage chunk counts them; a tool call; `RateLimitError` on the
eleventh request of a minute, with the server's `retry-after` and
`x-ratelimit-*` headers; the token quota spent (`insufficient_quota`); the
401 without a key; and the documented 500 forced for one call. Sessions
never see each other: the rate-limited session's neighbour is answered.

Usage: python3 .ci/llm-clients.py DOPPEL
"""
import json
import pathlib
import sys
import urllib.request

import openai

from doppel_serving import serving

ROOT = pathlib.Path(__file__).resolve().parent.parent
PORT = 18983
BASE = f"http://127.0.0.1:{PORT}"


def client(session, key="sk-test"):
    return openai.OpenAI(base_url=f"{BASE}/v1", api_key=key, max_retries=0, timeout=10,
                         default_headers={"Doppel-Session": session})


def admin(method, path, body=None):
    request = urllib.request.Request(f"{BASE}{path}", method=method, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read() or b"null")


def ask(chat, text, **extra):
    return chat.chat.completions.create(model="doppel-chat-1", messages=[{"role": "user", "content": text}], **extra)


def main() -> int:
    doppel = sys.argv[1]
    with serving(doppel, ROOT / "contracts/llm-chat.yaml", PORT):
        # A completion, and the session's usage adding up.
        chat = client("completion")
        answer = ask(chat, "Hello there")
        assert answer.choices[0].message.content == "This is a mock answer to: Hello there", answer
        assert answer.choices[0].finish_reason == "stop", answer
        assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens, answer.usage
        raw = chat.chat.completions.with_raw_response.create(model="doppel-chat-1", messages=[{"role": "user", "content": "Hi"}])
        spent = answer.usage.total_tokens + raw.parse().usage.total_tokens
        assert raw.headers["x-ratelimit-remaining-tokens"] == str(2000 - spent), (raw.headers, spent)
        assert raw.headers["x-ratelimit-remaining-requests"] == "8", raw.headers

        # A stream read to the end: the deltas join to the answer, the usage chunk counts them.
        chunks = list(ask(client("stream"), "Tell me a story", stream=True, stream_options={"include_usage": True}))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "This is a mock answer to: Tell me a story", text
        assert chunks[0].choices[0].delta.role == "assistant", chunks[0]
        finished = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        assert finished == ["stop"], finished
        usage = chunks[-1].usage
        deltas = sum(1 for c in chunks if c.choices and c.choices[0].delta.content)
        assert usage is not None and usage.completion_tokens == deltas, (usage, deltas)

        # A tool call when a tool is offered and the last message names it.
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}]
        called = ask(client("tools"), "Use get_weather for Paris", tools=tools)
        call = called.choices[0].message.tool_calls[0]
        assert called.choices[0].finish_reason == "tool_calls", called
        assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {}, call

        # Ten requests a minute: the eleventh raises RateLimitError with the server's hint.
        limited = client("limited")
        for n in range(10):
            ask(limited, f"Question {n}")
        try:
            ask(limited, "One too many")
            raise AssertionError("the eleventh request of the minute was answered")
        except openai.RateLimitError as error:
            assert error.status_code == 429 and error.code == "rate_limit_exceeded", error
            retry = int(error.response.headers["retry-after"])
            assert 1 <= retry <= 60, error.response.headers
            assert error.response.headers["x-ratelimit-remaining-requests"] == "0", error.response.headers
        # Another session is not limited by it.
        assert ask(client("neighbour"), "Still there?").choices[0].finish_reason == "stop"

        # The token quota: a session that has used its budget gets insufficient_quota.
        quota = client("quota")
        ask(quota, "word " * 1000)
        try:
            ask(quota, "And another")
            raise AssertionError("a completion past the token budget was answered")
        except openai.RateLimitError as error:
            assert error.code == "insufficient_quota" and error.type == "insufficient_quota", error.body

        # No key: the documented 401.
        try:
            ask(client("nokey", key="not a key"), "Hello")
            raise AssertionError("a malformed key was accepted")
        except openai.AuthenticationError as error:
            assert error.code == "invalid_api_key", error.body

        # The documented 500, forced for the next call of one session only.
        admin("POST", "/__doppel/next?session=broken", {"endpoint": "chat-completions", "status": 500})
        try:
            ask(client("broken"), "Hello")
            raise AssertionError("the forced 500 was not sent")
        except openai.InternalServerError as error:
            assert error.status_code == 500 and error.type == "server_error", error.body
        assert ask(client("broken"), "Hello").choices[0].finish_reason == "stop"

        print(f"llm-clients: the OpenAI SDK {openai.__version__} got a completion, a stream of {len(chunks)} chunks, a tool call, "
              f"RateLimitError (retry-after {retry} s), insufficient_quota, the 401 and a forced 500, session by session")
        return 0


if __name__ == "__main__":
    sys.exit(main())
