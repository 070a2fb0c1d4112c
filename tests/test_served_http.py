"""The served client and the downloads against misbehaving loopback servers (issue 34): the key
goes only to base_url's origin (a redirect elsewhere is refused), its value is masked in every
answer and error, and answers and downloads are read in chunks up to a limit."""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from csbench.errors import InputError
from csbench.fetch import _download
from csbench.lm.served import Endpoint, ServedScorer
from csbench.lm.served_http import MASK, ServedClient, ServedError

KEY = "sk-test-0123456789abcdef"
FAST = dict(max_concurrency=1, timeout=5, retries=1, backoff=0.01)


@contextmanager
def serve(answer):
    """A loopback server whose every request is answered by ``answer(handler)``; records the
    (method, path, Authorization) of each request in ``.seen``; stopped on exit."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        timeout = 10  # a stuck connection cannot hold the test

        def log_message(self, *a):
            pass

        def _any(self):
            seen.append((self.command, self.path, self.headers.get("Authorization")))
            if self.command == "POST":
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                answer(self)
            except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                pass

        do_GET = do_POST = _any

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.seen = seen
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def send(h, status, body: bytes, headers=(), length=True):
    h.send_response(status)
    for k, v in headers:
        h.send_header(k, v)
    if length:
        h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def redirect_to(target):
    return lambda h: send(h, 302, b"", [("Location", target + h.path)])


def client(base_url, monkeypatch, key=KEY, **kw):
    monkeypatch.setenv("CSB_TEST_KEY", key)
    return ServedClient(Endpoint(base_url, "fake-lm", "CSB_TEST_KEY"), {"http_requests": 0,
                        "retries": 0}, **{**FAST, **kw})


# ---------------------------------------------------------------- credentials stay at base_url
@pytest.mark.parametrize("path, body", [("/models", None), ("/completions", {"prompt": "x"})])
def test_redirect_to_another_origin_is_refused_naming_both_urls(monkeypatch, path, body):
    with serve(lambda h: send(h, 200, b"{}")) as other, serve(redirect_to(other.url)) as first:
        c = client(first.url + "/v1", monkeypatch)
        with pytest.raises(ServedError) as err:
            c.request(path, body)
        msg = str(err.value)
        assert f"{first.url}/v1{path}" in msg and f"{other.url}/v1{path}" in msg
        assert "another origin" in msg and "base_url" in msg
        assert other.seen == [] and KEY not in msg
        assert first.seen[0][2] == f"Bearer {KEY}"


@pytest.mark.parametrize("target", ["http://localhost:{port}", "https://127.0.0.1:{port}"])
def test_host_or_scheme_change_is_another_origin(monkeypatch, target):
    def answer(h):
        port = h.server.server_address[1]
        send(h, 302, b"", [("Location", target.format(port=port) + h.path)])
    with serve(answer) as srv:
        with pytest.raises(ServedError, match="another origin"):
            client(srv.url + "/v1", monkeypatch).request("/models")
        assert len(srv.seen) == 1


def test_same_origin_redirect_is_followed_with_the_key(monkeypatch):
    def answer(h):
        if h.path.startswith("/old/"):  # moved under /v1 on the same origin
            return send(h, 301, b"", [("Location", "/v1/" + h.path[len("/old/"):])])
        send(h, 200, json.dumps({"data": [{"id": "fake-lm"}]}).encode())
    with serve(answer) as srv:
        assert client(srv.url + "/old", monkeypatch).request("/models") == {
            "data": [{"id": "fake-lm"}]}
        assert srv.seen == [("GET", "/old/models", f"Bearer {KEY}"),
                            ("GET", "/v1/models", f"Bearer {KEY}")]


def test_redirect_loop_on_one_origin_is_bounded(monkeypatch):
    with serve(lambda h: send(h, 302, b"", [("Location", h.path + "x")])) as srv:
        with pytest.raises(ServedError, match="HTTP 302"):
            client(srv.url + "/v1", monkeypatch).request("/models")
        assert len(srv.seen) <= 6


# ---------------------------------------------------------------- the key is masked
def reflect(status):
    """Answers with the request's Authorization header in the body (an error, or a completion)."""
    def answer(h):
        auth = h.headers.get("Authorization") or ""
        body = ({"error": f"bad request from {auth}"} if status != 200 else
                {"choices": [{"index": 0, "text": f" you sent {auth}", "finish_reason": "stop",
                              auth: [auth]}]})
        send(h, status, json.dumps(body).encode())
    return answer


@pytest.mark.parametrize("status", [400, 422, 503])
def test_a_reflected_key_in_an_error_is_masked(monkeypatch, caplog, status):
    with serve(reflect(status)) as srv:
        with pytest.raises(ServedError) as err:
            client(srv.url + "/v1", monkeypatch).request("/completions", {"prompt": "x"})
    assert KEY not in str(err.value) and f"bad request from Bearer {MASK}" in str(err.value)
    assert KEY not in caplog.text


def test_a_reflected_key_in_an_answer_is_masked(monkeypatch, caplog):
    with serve(reflect(200)) as srv:
        got = client(srv.url + "/v1", monkeypatch).request("/completions", {"prompt": "x"})
    assert KEY not in json.dumps(got)
    assert got["choices"][0]["text"] == f" you sent Bearer {MASK}"
    assert "masked" in caplog.text and KEY not in caplog.text


def test_a_key_escaped_in_json_is_masked_too(monkeypatch):
    key = "sk/with/slashes"
    body = json.dumps({"text": key}).replace("/", "\\/").encode()
    with serve(lambda h: send(h, 200, body)) as srv:
        got = client(srv.url + "/v1", monkeypatch, key=key).request("/models")
    assert got == {"text": MASK}


def test_a_reflected_key_in_a_redirect_is_masked(monkeypatch):
    with serve(lambda h: send(h, 302, b"", [
            ("Location", "http://localhost:9/?k=" + h.headers["Authorization"][7:])])) as srv:
        with pytest.raises(ServedError) as err:
            client(srv.url + "/v1", monkeypatch).request("/models")
    assert KEY not in str(err.value) and MASK in str(err.value)


# ---------------------------------------------------------------- bounded answers
def endless(h):
    """200 without a length, bytes until the client stops reading (64 MB at most)."""
    send(h, 200, b"", length=False)
    for _ in range(64):
        h.wfile.write(b"x" * (1 << 20))


@pytest.mark.parametrize("answer", [
    endless, lambda h: send(h, 200, b"x" * (3 << 20)),
    lambda h: send(h, 200, b"", [("Content-Length", str(1 << 40))], length=False)])
def test_an_answer_over_the_limit_fails_at_once_naming_the_endpoint_and_limit(monkeypatch, answer):
    with serve(answer) as srv:
        c = client(srv.url + "/v1", monkeypatch, max_answer_bytes=1 << 20)
        with pytest.raises(ServedError) as err:
            c.request("/models")
        assert len(srv.seen) == 1  # not retried
    assert f"{srv.url}/v1/models" in str(err.value)
    assert "lm.served.max_answer_bytes (1,048,576 bytes)" in str(err.value)


def test_an_answer_at_the_limit_is_read(monkeypatch):
    body = json.dumps({"t": "x" * 1000}).encode()
    with serve(lambda h: send(h, 200, body, length=False)) as srv:
        got = client(srv.url + "/v1", monkeypatch, max_answer_bytes=len(body)).request("/models")
    assert got == {"t": "x" * 1000}


def test_the_scorer_takes_the_limit_from_the_served_settings(monkeypatch):
    monkeypatch.delenv("CSB_TEST_KEY", raising=False)
    s = ServedScorer(Endpoint("http://127.0.0.1:9/v1", "m"), max_answer_bytes=123, **FAST)
    assert s.client.max_answer_bytes == 123
    assert ServedScorer(Endpoint("http://127.0.0.1:9/v1", "m")).client.max_answer_bytes == 64 << 20


# ---------------------------------------------------------------- bounded downloads
@pytest.mark.parametrize("answer", [
    endless, lambda h: send(h, 200, b"", [("Content-Length", str(1 << 40))], length=False)])
def test_a_download_over_the_limit_fails_naming_url_and_limit(tmp_path, answer):
    dest = tmp_path / "f"
    with serve(answer) as srv:
        with pytest.raises(InputError) as err:
            _download(srv.url + "/data.json", dest, attempts=2, backoff=0.01,
                      max_bytes=1 << 20)
        assert len(srv.seen) == 1  # not retried
    assert f"{srv.url}/data.json" in str(err.value) and "1,048,576 bytes" in str(err.value)
    assert not dest.exists() or dest.stat().st_size <= 1 << 20
