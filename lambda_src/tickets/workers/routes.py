"""The worker-id lease routes (docs/reference/http-api.md): acquire, renew, release, list."""

from __future__ import annotations

from typing import Any

from .. import protocol
from ..errors import BadRequest, NotFound, echo
from ..messages import WorkerPool, WorkerRelease
from ..runtime import Runtime
from ..wire import Request, Response, json_response
from .config import MAX_EPOCH, MAX_OWNER_CHARS, OWNER_PATTERN, PoolConfig
from .store import WorkerStore


def acquire_worker(runtime: Runtime, request: Request, pool: str) -> Response:
    name = _authorized(runtime, request, pool)
    owner = _field(request, "owner")
    if owner is not None and (not isinstance(owner, str) or OWNER_PATTERN.fullmatch(owner) is None):
        raise BadRequest(f"the body's owner must be 1-{MAX_OWNER_CHARS} printable ASCII characters, got {echo(owner)}")

    def grant() -> dict[str, Any]:
        config = _config(runtime, name)  # after any replay: a retry gets its grant whatever the config is now
        return dict(_store(runtime).acquire(name, config, owner, _now(runtime)).granted(name, config))

    return json_response(200, runtime.once(request, {"route": "workers", "pool": name, "owner": owner}, grant))


def renew_worker(runtime: Runtime, request: Request, pool: str, worker: str) -> Response:
    name, config, number, epoch = _held(runtime, request, pool, worker)
    return json_response(200, _store(runtime).renew(name, number, epoch, config, _now(runtime)).granted(name, config))


def release_worker(runtime: Runtime, request: Request, pool: str, worker: str) -> Response:
    name, config, number, epoch = _held(runtime, request, pool, worker)
    released = _store(runtime).release(name, number, epoch, config, _now(runtime))
    answer: WorkerRelease = {"pool": name, "worker": number, "epoch": epoch, "released": released}
    if not released:
        answer["message"] = (
            f"worker {number} was not held at epoch {epoch} (released, expired or granted again): nothing changed"
        )
    return json_response(200, answer)


def list_workers(runtime: Runtime, request: Request, pool: str) -> Response:
    name = _authorized(runtime, request, pool)
    protocol.no_query_nor_body(f"GET /_workers/{name}", request.raw_query_string, request.body)
    config = _config(runtime, name)
    leases = [lease.live() for lease in _store(runtime).leases(name, config.size, _now(runtime))]
    answer: WorkerPool = {"pool": name, "size": config.size, "ttlSeconds": config.ttl_seconds, "leases": leases}
    return json_response(200, answer)


def _authorized(runtime: Runtime, request: Request, pool: str) -> str:
    name = protocol.decode_path_key(pool)
    runtime.authorize(request, name)
    return name


def _config(runtime: Runtime, name: str) -> PoolConfig:
    config = runtime.settings.workers.get(name)
    if config is None:
        configured = ", ".join(sorted(runtime.settings.workers)) or "none"
        raise NotFound(f"{echo(name)} is not a configured worker pool (configured: {configured})")
    return config


def _held(runtime: Runtime, request: Request, pool: str, worker: str) -> tuple[str, PoolConfig, int, int]:
    name = _authorized(runtime, request, pool)
    config = _config(runtime, name)
    if not (worker.isascii() and worker.isdigit() and len(worker) <= 5 and int(worker) < config.size):
        raise BadRequest(f"invalid worker {echo(worker)}: pool {name!r}'s are whole numbers 0 to {config.size - 1}")
    epoch = _field(request, "epoch")
    epoch = int(epoch) if isinstance(epoch, float) and epoch.is_integer() else epoch
    if isinstance(epoch, bool) or not isinstance(epoch, int) or not 1 <= epoch <= MAX_EPOCH:
        raise BadRequest(f'the body must be {{"epoch": E}}, E the integer epoch of the lease, got {echo(epoch)}')
    return name, config, int(worker), epoch


def _field(request: Request, allowed: str) -> Any:
    protocol.no_query_nor_body(f"{request.method} {request.path}", request.raw_query_string, None)
    body = protocol.request_body(request.body, request.is_base64_encoded)
    return protocol.body_fields(body, (allowed,), f'{{"{allowed}": ...}}').get(allowed)


def _store(runtime: Runtime) -> WorkerStore:
    assert runtime.workers_table is not None  # create_app refuses pools without it
    return WorkerStore(runtime.client, runtime.workers_table)


def _now(runtime: Runtime) -> int:
    return int(runtime.clock().timestamp() * 1000)
