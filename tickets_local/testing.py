"""Tickets for your tests: the local server in a process of its own, from a config given as a dict.

    with LocalTickets({"regions": {"us-east-1": 0}, "counters": {"orders": {"start": 5000}}}) as tickets:
        TicketsClient(tickets.url).next("orders")   # [5000]
        tickets.reset()                             # every counter gone: the next "orders" is 5000 again

The server (`python -m tickets_local`, the same interpreter) runs the real handler on the DynamoDB its
`backend` names (docs/reference/backends.md; by default held in its memory) or on `endpoint_url`. Nothing of it
runs in the caller's process: botocore is not patched, the environment is not changed, and a `mock_aws` of the
caller's own sees none of its tables. The pytest plugin (tickets_local.pytest_plugin) is built on this class.

Imports the standard library only: the pytest plugin imports this module in every session.
"""

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

from .local_paths import RESET_PATH
from .reset_mark import ResetMark

# The `tickets` config when a test names none: one region, one lane per key (so every key's tickets are
# dense: 1, 2, 3...), and any key accepted.
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
        """`config`: cdk.json's `tickets` object (DEFAULT_CONFIG when None), or `config_file`: a cdk.json with its
        ledger beside it; `region`: one of its regions (default the first); `endpoint_url`/`backend`: the DynamoDB
        (docs/reference/backends.md; default the server's memory); `python`: the interpreter (default this one);
        `play_callers`: enforce the access rules, as the caller a client's `play_caller` names; `config_name`: what
        answers call the config; `key_file`: opaque ids' keys (made at start if missing); `arguments`: more of
        python -m tickets_local's flags (docs/reference/local-server.md)."""
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
        self._resets: http.client.HTTPConnection | None = None  # reset()'s keep-alive connection (an endpoint's)
        self._resets_lock = threading.Lock()
        self._mark: ResetMark | None = None  # how reset() asks the server, unless the tables are an endpoint's

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
        if self.endpoint_url is None and self.backend != "endpoint":  # the server's own tables: reset by a mark
            self._mark = ResetMark.create()
        command = self._command()
        # The server's log (one line per request) goes to a file: a pipe nobody reads would fill and stall it.
        self._log = tempfile.TemporaryFile(prefix="tickets-local-")  # noqa: SIM115 (closed by stop())
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,  # closed by stop(), or by the system when this process ends
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=_child_environment(),
        )
        try:
            self.banner = self._read_banner()
        except BaseException:
            self.stop()
            raise
        self._url = _banner_field(self.banner, "url")
        made = _banner_field(self.banner, "keys") if self.key_file is None else None  # a key file made at start
        self.key_file = Path(made) if made is not None else self.key_file
        # After the banner the handler's log lines (a warning per refused request) go to stdout: read and
        # drop them, or a pipe nobody reads fills and the server stalls in the middle of a request.
        threading.Thread(target=_drain, args=(self._process.stdout,), daemon=True).start()
        return self

    def _command(self) -> list[str]:
        """`python -m tickets_local` with this server's options."""
        config = ["--config-json", json.dumps(self.config)]
        config = ["--config", str(self.config_file)] if self.config_file is not None else config
        mark = self._mark.path if self._mark is not None else None
        named: dict[str, object] = {"--config-name": self.config_name, "--region": self.region}
        named |= {"--endpoint-url": self.endpoint_url, "--backend": self.backend, "--key-file": self.key_file}
        named["--reset-mark"] = mark
        command = [self.python, "-m", "tickets_local", "--port", "0", "--allow-reset", "--exit-with-stdin", *config]
        command += [part for flag, value in named.items() if value for part in (flag, str(value))]
        return command + ["--verbose"] * self.verbose + ["--play-callers"] * self.play_callers + self.arguments

    def reset(self) -> None:
        """Every counter and idempotency record gone, and the handler's cached state with it (a new
        execution environment): the next ticket of every key is its first again. On the server's own tables, a
        mark the server reads before it serves anything (reset_mark.py): no request, no wait. On an endpoint, the
        tables there are emptied now, whoever else uses them, by a request on one keep-alive connection: a suite
        resets before every test, and a new connection each time would cost more than the reset."""
        if self._mark is not None:
            if not self.running:
                raise LocalTicketsError(f"the local server is not running, so it cannot reset\n{self.log_tail()}")
            with self._resets_lock:  # two threads' bumps must both move it
                self._mark.bump()
            return
        with self._resets_lock:
            for attempt in range(2):  # a kept connection the server closed meanwhile (idle, restarted) is made anew
                if self._resets is None:
                    parts = urlsplit(self.url)
                    self._resets = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
                try:
                    self._resets.request("POST", RESET_PATH, body=b"")
                    answer = self._resets.getresponse()
                    body = answer.read()
                except (http.client.HTTPException, OSError) as err:
                    self._close_resets()
                    if attempt:
                        raise LocalTicketsError(f"the local server did not reset: {err}\n{self.log_tail()}") from None
                    continue
                if answer.status != 200:
                    raise LocalTicketsError(f"the local server did not reset ({answer.status}: {body[:500]!r})")
                return

    def _close_resets(self) -> None:
        if self._resets is not None:
            self._resets.close()
            self._resets = None

    def stop(self) -> None:
        self._close_resets()
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
        """Tell the server to stop (close its stdin: --exit-with-stdin) without waiting: stop() waits.
        Several servers stop in the time of one when each is asked before any is waited for."""
        if self._process is not None and self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()

    def log_tail(self) -> str:
        """The end of the server's log (stderr): what it said before a failure."""
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
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LocalTicketsError(
                        f"the local server did not start within {START_TIMEOUT_SECONDS} s:\n{self.log_tail()}"
                    )
                if not selector.select(timeout=left):
                    continue
                chunk = os.read(stdout.fileno(), 65536)
                if not chunk:
                    self._process.wait()
                    raise LocalTicketsError(
                        f"the local server exited ({self._process.returncode}) before it listened:\n{self.log_tail()}"
                    )
                printed += chunk
        return printed.decode()


def _banner_field(banner: str, name: str) -> str | None:
    """The first word after `name:` on the banner's line of that name (the url, the key file), if it has one."""
    return next((line.split()[1] for line in banner.splitlines() if line.strip().startswith(f"{name}:")), None)


def _child_environment() -> dict[str, str]:
    """This process's environment, with the directories this process imports Tickets from first on the
    child's path (a PYTHONPATH set in code, or pytest's rootdir insertion, is not inherited); an installed
    copy, in site-packages, the child finds by itself."""
    environment = dict(os.environ)
    installed = {str(Path(path).resolve()) for path in (*site.getsitepackages(), site.getusersitepackages())}
    roots = []
    for package in ("tickets_local", "tickets"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin is not None:
            root = str(Path(spec.origin).resolve().parent.parent)
            if root not in roots and root not in installed:
                roots.append(root)
    inherited = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = os.pathsep.join([*roots, *([inherited] if inherited else [])])
    return environment


def _drain(stream: IO[bytes] | None) -> None:
    """Read `stream` until it ends (or is closed by stop())."""
    with contextlib.suppress(OSError, ValueError):
        # A Popen pipe is a BufferedReader: read1 returns what has arrived instead of waiting for 64 KiB.
        while stream is not None and cast(io.BufferedReader, stream).read1(65536):
            pass
