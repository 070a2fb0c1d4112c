"""A small fake OpenAI-compatible server (http.server) for the served-model tests: /v1/models,
/v1/completions with echo+logprobs and sampling, /v1/chat/completions with sampling (``chat``:
off makes it answer 404), and switches for every failure the client must handle (a key, no
log-probs, a wrong model list, 5xx/429 bursts, dying mid-run, invalid log-prob values, prompts
longer than its context window), and an echo that leaves special tokens out as llama-cpp-python's
does (``specials``)."""
from __future__ import annotations

import json
import re
import socket
import threading
import zlib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

START = "<s>"
TOKEN = re.compile(r"\s*\S+|\s+$")


def tokens(text: str) -> list[tuple[int, str]]:
    """(offset, token) pairs: a token is optional leading whitespace and a run of non-space."""
    return [(m.start(), m.group()) for m in TOKEN.finditer(text)]


def token_logprob(prefix: str, token: str) -> float:
    """Deterministic stand-in for log p(token | prefix)."""
    return -((zlib.crc32((prefix[-12:] + "|" + token).encode()) % 1000) / 250.0 + 0.01)


def echo_tokens(prompt: str, specials=(), start: str = START) -> tuple[str, list[tuple[int, str]]]:
    """The echoed text and its (offset, token) pairs as llama-cpp-python echoes a prompt holding
    ``specials``: each a token of its own, written as "" (the start token: left out), the offsets
    counted in the text without them."""
    if not specials:
        return prompt, tokens(prompt)
    text, out = "", []
    for part in re.split("(" + "|".join(map(re.escape, specials)) + ")", prompt):
        if part in specials:
            if part != start:
                out.append((len(text), ""))
            continue
        out += [(len(text) + o, t) for o, t in tokens(part)]
        text += part
    return text, out


def expected(context: str, continuation: str) -> tuple[float, int]:
    """What the fake server's answers sum to for one request (harness whitespace convention)."""
    n = len(context) - len(context.rstrip())
    if n:
        context, continuation = context[:-n], context[-n:] + continuation
    prompt = context + continuation
    total, k = 0.0, 0
    for off, tok in tokens(prompt):
        if off + len(tok) > len(context):
            total += token_logprob(prompt[:off], tok)
            k += 1
    return total, k


class FakeServer:
    def __init__(self, model: str = "fake-lm", key: str | None = None, logprobs: bool = True,
                 honour_n: bool = True, models: list[str] | None = None, port: int = 0,
                 shift: bool = False, start: str = START, specials=()):
        self.model, self.key, self.logprobs, self.honour_n = model, key, logprobs, honour_n
        self.models = models if models is not None else [model]
        # shift: echoed log-probs are off by one position unless the prompt starts with START
        # (as llama-cpp-python 0.3 with a model that adds no start token); START is then dropped
        self.shift, self.start = shift, start
        # specials: texts the echo leaves out as llama-cpp-python does (echo_tokens)
        self.specials = tuple(specials)
        # poison: {substring: value}: an echoed prompt containing the substring gets ``value``
        # (NaN, inf, a positive number, a string...) as the log-prob of its last prompt token
        self.poison: dict = {}
        # n_ctx: prompts whose tokens plus max_tokens exceed it are refused as llama.cpp does
        self.n_ctx: int | None = None
        self.fail_next = 0          # answer this many requests with fail_status
        self.fail_status = 503
        self.die_after = None       # after this many completions, drop every connection
        self.dead = False
        self.completions = 0
        self.prompts: Counter = Counter()   # scoring prompts answered (echo requests)
        self.sampled: list[str] = []        # prompts of sampling requests on /completions
        self.chat = True                    # serve /chat/completions
        self.chats: list[list[dict]] = []   # messages of the chat requests answered
        self.headers_seen: list[str] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _send(self, status, obj, headers=()):
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _gate(self) -> bool:
                with fake.lock:
                    fake.headers_seen.append(self.headers.get("Authorization") or "")
                    if fake.dead:
                        self.close_connection = True
                        try:
                            self.connection.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        return False
                    if fake.fail_next > 0:
                        fake.fail_next -= 1
                        self._send(fake.fail_status, {"error": {"message": "busy"}},
                                   [("Retry-After", "0")] if fake.fail_status == 429 else ())
                        return False
                if fake.key is not None and self.headers.get("Authorization") != f"Bearer {fake.key}":
                    self._send(401, {"error": {"message": "invalid api key"}})
                    return False
                return True

            def do_GET(self):
                if not self._gate():
                    return
                if self.path.rstrip("/") == "/v1/models":
                    return self._send(200, {"object": "list", "data": [
                        {"id": m, "object": "model"} for m in fake.models]})
                self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if not self._gate():
                    return
                if self.path.rstrip("/") == "/v1/chat/completions" and fake.chat:
                    with fake.lock:
                        fake.chats.append(body["messages"])
                    n = int(body.get("n", 1)) if fake.honour_n else 1
                    seed = int(body.get("seed", 0))
                    return self._send(200, {"choices": [
                        {"index": i, "message": {"role": "assistant",
                                                 "content": f"chat{(seed + i) % 5}. more"}}
                        for i in range(n)]})
                if self.path.rstrip("/") != "/v1/completions":
                    return self._send(404, {"error": {"message": "not found"}})
                with fake.lock:
                    if fake.die_after is not None and fake.completions >= fake.die_after:
                        fake.dead = True
                    if fake.dead:
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    fake.completions += 1
                prompt = body["prompt"]
                if fake.n_ctx is not None:
                    want = len(tokens(prompt)) + int(body.get("max_tokens") or 16)
                    if want > fake.n_ctx:
                        return self._send(400, {"error": {
                            "message": f"Requested tokens ({want}) exceed context window of "
                                       f"{fake.n_ctx}", "type": "invalid_request_error"}})
                started = prompt.startswith(fake.start)
                if started:
                    prompt = prompt[len(fake.start):]
                if body.get("logprobs") and not body.get("echo"):  # greedy next token
                    return self._send(200, {"choices": [{"index": 0, "text": " west", "logprobs": {
                        "tokens": [" west"], "text_offset": [len(prompt)],
                        "token_logprobs": [token_logprob(prompt, " west")],
                        "top_logprobs": [{" west": token_logprob(prompt, " west"),
                                          " cat": token_logprob(prompt, " cat")}]}}]})
                if body.get("echo"):
                    with fake.lock:
                        fake.prompts[prompt] += 1
                    text, toks = echo_tokens(prompt, fake.specials, fake.start)
                    toks = toks + [(len(text), " x")]
                    lp = None
                    if fake.logprobs:
                        lp = {"tokens": [t for _, t in toks], "text_offset": [o for o, _ in toks],
                              "token_logprobs": [None if i == 0 else token_logprob(text[:o], t)
                                                 for i, (o, t) in enumerate(toks)],
                              "top_logprobs": None}
                    if lp is not None and fake.shift and not started:
                        lp["token_logprobs"] = lp["token_logprobs"][1:] + [-1.0]
                    for part, value in fake.poison.items():
                        if lp is not None and part in prompt:
                            lp["token_logprobs"][-2] = value  # the last prompt token
                    return self._send(200, {"choices": [{"index": 0, "text": prompt + " x",
                                                         "logprobs": lp}]})
                with fake.lock:
                    fake.sampled.append(body["prompt"])
                n = int(body.get("n", 1)) if fake.honour_n else 1
                seed = int(body.get("seed", 0))
                texts = [f" answer{(seed + i) % 7}. more\nnext" for i in range(n)]
                choices = []
                for i, t in enumerate(texts):  # cut at the first stop string, as servers do
                    at = min((t.index(s) for s in body.get("stop") or () if s in t), default=-1)
                    choices.append({"index": i, "text": t if at < 0 else t[:at], "logprobs": None,
                                    "finish_reason": "length" if at < 0 else "stop"})
                return self._send(200, {"choices": choices})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
