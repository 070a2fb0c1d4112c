"""LlamaServer (tests/llama_server.py) against a stub server process, no llama.cpp needed: a
server that exits at start-up, one that crashes on its first completion (SIGSEGV, as ggml's AMX
path did), one that never answers, and a healthy one that is stopped."""
from __future__ import annotations

import json
import signal
import sys
import urllib.request

import pytest

from llama_server import LlamaServer, ServerDied, describe_exit

# Stands in for `python -m llama_cpp.server ...`: the first argument picks the behaviour.
FAKE = r'''
import http.server, json, os, resource, signal, sys, time
mode, args = sys.argv[1], sys.argv[2:]
port = int(args[args.index("--port") + 1])
print("fake llama server: model", args[args.index("--model") + 1], flush=True)
if mode == "exit":
    print("error: failed to load model (fake)", flush=True)
    sys.exit(3)
if mode == "silent":
    time.sleep(60)

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"data": [{"id": "smollm2"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        print("libggml-cpu.so: general protection fault (fake)", flush=True)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file
        os.kill(os.getpid(), signal.SIGSEGV)

    def log_message(self, *a):
        pass

http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''


@pytest.fixture()
def fake_python(tmp_path):
    """A stub 'python' for LlamaServer that runs FAKE in the given mode."""
    script = tmp_path / "fake_llama_server.py"
    script.write_text(FAKE)

    def make(mode: str) -> str:
        exe = tmp_path / f"python-{mode}"
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" {mode} "$@"\n')
        exe.chmod(0o755)
        return str(exe)
    return make


def post_completion(srv: LlamaServer) -> None:
    req = urllib.request.Request(srv.base_url + "/completions", data=json.dumps(
        {"model": srv.alias, "prompt": "a", "max_tokens": 1}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


def test_describe_exit_names_codes_and_signals():
    assert describe_exit(3) == "exited with code 3"
    assert describe_exit(-signal.SIGSEGV) == "killed by signal 11 (SIGSEGV)"
    assert describe_exit(-99) == "killed by signal 99"


@pytest.mark.parametrize("own_log", [False, True])
def test_a_server_that_exits_at_start_up_says_so_with_its_log(fake_python, tmp_path, own_log):
    log = None if own_log else tmp_path / "server.log"
    srv = LlamaServer(fake_python("exit"), "m.gguf", log_path=log, startup_timeout=30)
    with pytest.raises(ServerDied) as err:
        srv.start()
    msg = str(err.value)
    assert "died: exited with code 3" in msg and "failed to load model (fake)" in msg
    assert "fake llama server: model m.gguf" in msg and str(srv.log_path) in msg
    assert srv.proc is None and srv.log_path.exists()  # a temporary log stays for a dead server
    if own_log:
        srv.log_path.unlink()


def test_a_server_that_crashes_mid_run_raises_server_died_with_signal_and_log_tail(
        fake_python, tmp_path):
    log = tmp_path / "server.log"
    with pytest.raises(ServerDied) as err:
        with LlamaServer(fake_python("crash"), "m.gguf", log_path=log, startup_timeout=30) as srv:
            srv.check()  # alive after start-up
            post_completion(srv)  # the server dies on it: connection reset
    msg = str(err.value)
    assert "died: killed by signal 11 (SIGSEGV)" in msg, msg
    assert "general protection fault (fake)" in msg and str(log) in msg
    assert isinstance(err.value.__cause__, OSError)  # chained to the client's error


def test_check_after_a_crash_and_a_healthy_server_is_not_reported_dead(fake_python):
    srv = LlamaServer(fake_python("crash"), "m.gguf", startup_timeout=30).start()
    try:
        with pytest.raises(OSError):
            post_completion(srv)
        with pytest.raises(ServerDied, match="SIGSEGV"):
            srv.check(grace=10)
    finally:
        srv.stop()
    srv.log_path.unlink()
    with pytest.raises(ValueError):  # an unrelated error in a live server's block stays itself
        with LlamaServer(fake_python("healthy"), "m.gguf", startup_timeout=30) as healthy:
            healthy.check()
            raise ValueError("not the server's fault")
    assert healthy.proc is None and not healthy.log_path.exists()  # its temporary log is removed


def test_a_server_that_never_answers_times_out_with_its_log(fake_python):
    srv = LlamaServer(fake_python("silent"), "m.gguf", startup_timeout=1)
    with pytest.raises(RuntimeError, match="did not answer within 1s") as err:
        srv.start()
    assert not isinstance(err.value, ServerDied) and "fake llama server" in str(err.value)
    assert srv.proc is None
