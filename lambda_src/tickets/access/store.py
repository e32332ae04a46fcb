"""The access rules from the SSM parameters the stack writes (tickets_cdk/access_rules.py), read once."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, Self, TypeVar

from botocore.config import Config

from .. import timing
from ..botocore_session import new_session
from ..dynamodb_errors import Failure, classify
from ..errors import Unavailable
from .rules import Rules

RETRY_AFTER_FAILURE_SECONDS = 5.0  # while unreadable, SSM is asked again at most this often
T = TypeVar("T")
SSM_CONFIG = Config(  # one attempt: StoredValue decides when to ask again
    retries={"mode": "standard", "total_max_attempts": 1},
    connect_timeout=timing.SSM_CONNECT_TIMEOUT_SECONDS,
    read_timeout=timing.SSM_READ_TIMEOUT_SECONDS,
)


class StoredValue(Generic[T]):
    """A value read from SSM once, again while unreadable (or short); a failure's cause kept for the 503, no default."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, pause: Callable[[float], None] = time.sleep):
        self._clock, self._pause = clock, pause
        self._value: T | None = None
        self._tried_at: float | None = None
        self._why = ""

    def read_at_cold_start(self) -> Self:
        """Again after a random pause if it failed transiently: a burst of cold starts may be throttled."""
        for attempt in range(timing.SSM_COLD_START_ATTEMPTS):
            if attempt:
                self._pause(random.uniform(0, timing.SSM_RETRY_PAUSE_SECONDS))
            failure = self.try_read()
            if failure is None or classify(failure) is not Failure.UNAVAILABLE:
                break
        return self

    def _current(self, short: bool = False) -> T | None:
        due = self._tried_at is None or self._clock() - self._tried_at >= RETRY_AFTER_FAILURE_SECONDS
        if (self._value is None or short) and due:
            self.try_read()
        return self._value

    def try_read(self) -> Exception | None:
        self._tried_at = self._clock()
        try:
            self._value = self._read()
        except Exception as err:
            self._why = self._cause(err)
            return err
        return None

    def _cause(self, err: Exception) -> str:
        return f"{type(err).__name__}: {err}"[:200]

    def _read(self) -> T:
        raise NotImplementedError


class StoredRules(StoredValue[Rules]):
    def __init__(self, ssm: Any, names: Sequence[str], **timing: Any):  # timing: StoredValue's clock and pause
        super().__init__(**timing)
        self._ssm, self._names = ssm, list(names)

    def __call__(self) -> Rules:
        rules = self._current()
        if rules is None:
            raise Unavailable(f"this function cannot read its access rules ({self._why}); nothing was done")
        return rules

    def _read(self) -> Rules:
        answer = self._ssm.get_parameters(Names=self._names)
        if answer.get("InvalidParameters"):
            raise LookupError(f"missing parameters: {', '.join(answer['InvalidParameters'])}")
        values = {parameter["Name"]: parameter["Value"] for parameter in answer["Parameters"]}
        entries: list[tuple[str, Any]] = []
        for name in self._names:
            # Entries, not a dict: a principal may be written twice, and each entry grants what it says.
            principals = json.loads(values[name], object_pairs_hook=_Entries)
            if not isinstance(principals, _Entries):
                raise ValueError(f"{name}: not an object of principals")
            entries.extend((principal, dict(operations)) for principal, operations in principals)
        return Rules.from_entries(entries)


class _Entries(list[tuple[str, Any]]): ...  # a JSON object's (name, value) pairs, duplicates kept


def ssm_client(session: Any = None, **where: Any) -> Any:
    session = session or new_session()
    loader = session.get_component("data_loader")
    session.register_component("data_loader", _TwoReadsOfSSM(loader))
    try:
        return session.create_client("ssm", config=SSM_CONFIG, **where)
    finally:
        session.register_component("data_loader", loader)


class _TwoReadsOfSSM:
    def __init__(self, loader: Any):
        self._loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def load_service_model(self, service_name: str, type_name: str, api_version: str | None = None) -> Any:
        if (service_name, type_name) == ("ssm", "service-2"):
            return SSM_READS_MODEL
        return self._loader.load_service_model(service_name, type_name, api_version)


def _structure(required: list[str] | None = None, **members: str) -> dict[str, Any]:
    shape = {"type": "structure", "members": {name: {"shape": member} for name, member in members.items()}}
    return shape | ({"required": required} if required else {})


# botocore's SSM model cut to GetParameters and GetParameter and the answers' names and values (a cold start loads
# less): each entry is botocore's own (tests/functional/access/test_access_store.py).
SSM_READS_MODEL: dict[str, Any] = {
    "version": "2.0",
    "metadata": {
        "apiVersion": "2014-11-06",
        "endpointPrefix": "ssm",
        "jsonVersion": "1.1",
        "protocol": "json",
        "serviceId": "SSM",
        "signatureVersion": "v4",
        "targetPrefix": "AmazonSSM",
    },
    "operations": {
        name: {
            "name": name,
            "http": {"method": "POST", "requestUri": "/"},
            "input": {"shape": f"{name}Request"},
            "output": {"shape": f"{name}Result"},
        }
        for name in ("GetParameter", "GetParameters")
    },
    "shapes": {
        "Boolean": {"type": "boolean"},
        "GetParameterRequest": _structure(["Name"], Name="PSParameterName", WithDecryption="Boolean"),
        "GetParameterResult": _structure(Parameter="Parameter"),
        "GetParametersRequest": _structure(["Names"], Names="ParameterNameList", WithDecryption="Boolean"),
        "GetParametersResult": _structure(Parameters="ParameterList", InvalidParameters="ParameterNameList"),
        "PSParameterName": {"type": "string"},
        "PSParameterValue": {"type": "string"},
        "Parameter": _structure(Name="PSParameterName", Value="PSParameterValue"),
        "ParameterList": {"type": "list", "member": {"shape": "Parameter"}},
        "ParameterNameList": {"type": "list", "member": {"shape": "PSParameterName"}},
    },
}
