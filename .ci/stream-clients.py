"""OpenAPI 3.2 streams read by a real client nobody here wrote.

Serves Tests/Clients/chat-stream.yaml (a chat completion streamed as
Server-Sent Events, described by an itemSchema) with `doppel serve` on
loopback, and reads it with the official OpenAI Python SDK (`openai` from
PyPI): the SDK must see each chunk's delta in order and stop at `[DONE]`,
and a request the document refuses must reach it as its 422 error.

Usage: python3 .ci/stream-clients.py DOPPEL
"""
import pathlib
import sys

import openai

from doppel_serving import serving

ROOT = pathlib.Path(__file__).resolve().parent.parent
PORT = 18981


def main() -> int:
    doppel = sys.argv[1]
    with serving(doppel, ROOT / "Tests/Clients/chat-stream.yaml", PORT):
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{PORT}/v1", api_key="sk-test", max_retries=0, timeout=10)
        chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True))
        deltas = [chunk.choices[0].delta.content for chunk in chunks]
        assert deltas == ["Hel", "lo"], deltas
        assert chunks[0].choices[0].delta.role == "assistant", chunks[0]
        assert chunks[-1].choices[0].finish_reason == "stop", chunks[-1]
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user"}], stream=True)
            raise AssertionError("a message without content was taken")
        except openai.UnprocessableEntityError as error:
            assert error.status_code == 422, error
            assert "/body/messages/0/content" in str(error.body), error.body
        print(f"stream-clients: the OpenAI SDK {openai.__version__} read {len(chunks)} chunks of an itemSchema stream and its 422")
        return 0


if __name__ == "__main__":
    sys.exit(main())
