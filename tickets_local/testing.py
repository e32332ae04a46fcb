"""Tickets for your tests: the local server in a process of its own (docs/how-to/test-your-code.md), so botocore, the
environment and your own `mock_aws` are left alone. The standard library only: the plugin imports it each session."""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import io
import json
import os
import selectors
import site
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, cast
from urllib.parse import urlsplit

from .reset_mark import ResetMark

# The paths the local server answers itself (no key starts with `_`; deployed, they are 404), here for the test kit
OPENAPI_PATH = "/_local/openapi.json"  # the API's OpenAPI document, for this server's config
COUNTERS_PATH = "/_local/counters"  # every counter item of the server's table
RESET_PATH = "/_local/reset"
# One region, one lane per key (each key's tickets dense: 1, 2, 3...), any key accepted.
DEFAULT_CONFIG: dict[str, Any] = {"regions": {"us-east-1": 0}, "regionSlots": 1, "strictKeys": False}
START_TIMEOUT_SECONDS = 60  # importing moto on a loaded machine; a start normally takes under a second
_BANNER_END = "Ctrl-C stops it."
_LOG_TAIL_CHARS = 4000


class LocalTicketsError(RuntimeError):
    """The local server did not start, or did not answer; the message carries its log's end."""


class LocalTickets:
    """The real handler behind a local Function URL, in a child process: start(), url, reset(), stop()."""

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        region: str | None = None,
        endpoint_url: str | None = None,
        python: str | None = None,
        verbose: bool = False,
        play_callers: bool = False,
        config_file: str | Path | None = None,
        config_name: str | None = None,
        key_file: str | Path | None = None,
        backend: str | None = None,
        arguments: Sequence[str] = (),
    ):
        """`config`: cdk.json's `tickets` object (or `config_file`); `python`: the interpreter (default this one);
        `arguments`: more flags; the others are the server's flags (docs/reference/local-server.md)."""
        self.config = dict(DEFAULT_CONFIG if config is None else config)
        self.region = region
        self.endpoint_url = endpoint_url
        self.backend = backend
        self.python = python or sys.executable
        self.verbose = verbose
        self.play_callers = play_callers
        self.config_file = config_file
        self.config_name = config_name or (
            str(config_file) if config_file is not None else "the config given to LocalTickets"
        )
        self.key_file = Path(key_file) if key_file is not None else None  # the server's, once started
        self.arguments = list(arguments)
        self.banner = ""  # what the server printed when it started (url, backend, region, tables)
        self._url: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._mark: ResetMark | None = None  # reset() on the server's own tables
        self._mark_lock = threading.Lock()  # two threads' bumps must both move it
        self._stdin = -1  # the server's standard input, once started

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("the local server is not running; call start() first")
        return self._url

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> LocalTickets:
        if self._process is not None:
            raise RuntimeError("the local server is already running")
        if self.endpoint_url is None and self.backend != "endpoint":
            self._mark = ResetMark.create()
        # The log goes to a file: a pipe nobody reads would fill and stall the server.
        self._log = tempfile.TemporaryFile(prefix="tickets-local-")  # noqa: SIM115 (closed by stop())
        self._process = subprocess.Popen(
            self._command(),
            stdin=subprocess.PIPE,  # closed by stop(), or by the system when this process ends
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=_child_environment(),
        )
        self._stdin = self._process.stdin.fileno()  # type: ignore[union-attr]  # a pipe, as asked
        os.set_blocking(self._stdin, False)  # reset() never waits on a server that stopped reading
        try:
            self.banner = self._read_banner()
        except BaseException:
            self.stop()
            raise
        self._url = _banner_field(self.banner, "url")
        made = _banner_field(self.banner, "keys") if self.key_file is None else None  # a key file made at start
        self.key_file = Path(made) if made is not None else self.key_file
        # After the banner, the handler's log lines go to stdout: drained, or the server would stall.
        threading.Thread(target=_drain, args=(self._process.stdout,), daemon=True).start()
        return self

    def _command(self) -> list[str]:
        config = ["--config-json", json.dumps(self.config)]
        config = ["--config", str(self.config_file)] if self.config_file is not None else config
        named: dict[str, object] = {"--config-name": self.config_name, "--region": self.region}
        named |= {"--endpoint-url": self.endpoint_url, "--backend": self.backend, "--key-file": self.key_file}
        named["--reset-mark"] = self._mark.path if self._mark is not None else None
        command = [self.python, "-m", "tickets_local", "--port", "0", "--allow-reset", "--exit-with-stdin", *config]
        command += [part for flag, value in named.items() if value for part in (flag, str(value))]
        return command + ["--verbose"] * self.verbose + ["--play-callers"] * self.play_callers + self.arguments

    def reset(self) -> None:
        """Every counter, idempotency record and cached state gone: on the server's own tables a mark it reads before
        its next invocation (reset_mark.py, no wait), and a byte on its stdin that has it run the reset at once, while
        the test sets up, rather than in its first request; on an endpoint a request (emptying its tables costs more
        than a connection)."""
        if self._mark is not None:
            if not self.running:
                raise LocalTicketsError(f"the local server is not running, so it cannot reset\n{self.log_tail()}")
            with self._mark_lock:
                self._mark.bump()
            with contextlib.suppress(OSError):  # a full pipe, or a closed one: the next request runs the reset
                if self._stdin >= 0:
                    os.write(self._stdin, b"\n")
            return
        parts = urlsplit(self.url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        try:
            connection.request("POST", RESET_PATH, body=b"")
            answer = connection.getresponse()
            body = answer.read()
        except (http.client.HTTPException, OSError) as err:
            raise LocalTicketsError(f"the local server did not reset: {err}\n{self.log_tail()}") from None
        finally:
            connection.close()
        if answer.status != 200:
            raise LocalTicketsError(f"the local server did not reset ({answer.status}: {body[:500]!r})")

    def stop(self) -> None:
        if self._mark is not None:
            self._mark.close(remove=True)
            self._mark = None
        self.ask_to_stop()
        process, self._process, self._url = self._process, None, None
        if process is not None:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def ask_to_stop(self) -> None:
        """Close the server's stdin (--exit-with-stdin), not waiting: several servers stop in the time of one."""
        self._stdin = -1  # closed below: its number may be another file's next
        if self._process is not None and self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()

    def log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-_LOG_TAIL_CHARS:]

    def __enter__(self) -> LocalTickets:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _read_banner(self) -> str:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        printed = b""
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while _BANNER_END.encode() not in printed:
                if not selector.select(timeout=deadline - time.monotonic()):  # empty only once the time is out
                    raise LocalTicketsError(
                        f"the local server did not start within {START_TIMEOUT_SECONDS} s:\n{self.log_tail()}"
                    )
                chunk = os.read(stdout.fileno(), 65536)
                if not chunk:
                    self._process.wait()
                    raise LocalTicketsError(
                        f"the local server exited ({self._process.returncode}) before it listened:\n{self.log_tail()}"
                    )
                printed += chunk
        return printed.decode()


def _banner_field(banner: str, name: str) -> str | None:
    return next((line.split()[1] for line in banner.splitlines() if line.strip().startswith(f"{name}:")), None)


def _child_environment() -> dict[str, str]:
    """This environment, with where this process imports Tickets from (unless site-packages) first on PYTHONPATH:
    a path set in code, as pytest's rootdir insertion, is not inherited."""
    installed = {str(Path(path).resolve()) for path in (*site.getsitepackages(), site.getusersitepackages())}
    roots = []
    for package in ("tickets_local", "tickets"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin is not None:
            root = str(Path(spec.origin).resolve().parent.parent)
            if root not in roots and root not in installed:
                roots.append(root)
    inherited = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*roots, *([inherited] if inherited else [])])}


def _drain(stream: IO[bytes] | None) -> None:
    """Read `stream` until it ends (or stop() closes it); read1 returns what arrived, not waiting for 64 KiB."""
    with contextlib.suppress(OSError, ValueError):
        while stream is not None and cast(io.BufferedReader, stream).read1(65536):
            pass
