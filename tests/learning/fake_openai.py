"""A small local HTTP server that speaks the OpenAI chat completions API, for the real client.

Each test queues replies: a JSON body for the assistant message, a raw (malformed) body,
an HTTP error status, or a delay. Requests are recorded for assertions.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str | None = None  # the assistant message's content (a JSON string, or anything)
    status: int = 200
    delay: float = 0.0
    raw_body: bytes | None = None  # replaces the whole HTTP body


@dataclass
class FakeOpenAI:
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reply_json(self, payload: dict) -> None:
        self.replies.append(Reply(content=json.dumps(payload)))

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(
                    {"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()}}
                )
                embeddings = self.path.endswith("/embeddings")
                reply = Reply() if embeddings else (fake.replies.pop(0) if fake.replies else Reply(status=500))
                if reply.delay:
                    time.sleep(reply.delay)
                if self.path.endswith("/embeddings"):
                    vectors = []
                    for text in body["input"]:
                        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
                        vectors.append([((seed >> (i % 24)) & 7) - 3.5 + i * 0.01 for i in range(body["dimensions"])])
                    data = json.dumps(
                        {
                            "object": "list",
                            "model": body["model"],
                            "data": [
                                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
                            ],
                            "usage": {"prompt_tokens": 1, "total_tokens": 1},
                        }
                    ).encode()
                elif reply.raw_body is not None:
                    data = reply.raw_body
                elif reply.status != 200:
                    data = json.dumps({"error": {"message": "boom", "type": "server_error"}}).encode()
                else:
                    data = json.dumps(
                        {
                            "id": "chatcmpl-test",
                            "object": "chat.completion",
                            "created": int(time.time()),
                            "model": body.get("model", ""),
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": reply.content, "refusal": None},
                                }
                            ],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                        }
                    ).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): that is the point of a slow reply

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
