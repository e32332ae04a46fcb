"""A server knows its layout or refuses (tickets_local/deployment.py): after eu-west-1 was added above a fence, a
server started from another checkout (no ledger, an older one, a conflicted one, --config-json) never serves the
first layout again, which would repeat what us-east-1 issued; the one with the deployment's ledger serves above the
fence. Real processes: a dynalite per region, a fence run as a process, servers started as processes.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pytest
from test_fence import checkout, fence_process, synthesise

from local_support import running_dynalite
from tickets_deploy.config import parse_config
from tickets_deploy.ledger import init_ledger_file, read_ledger_file
from tickets_local.testing import LocalTickets, LocalTicketsError

pytestmark = pytest.mark.slow

OLD = {"regions": {"us-east-1": 0}, "regionSlots": 1, "strictKeys": True, "counters": {"orders": {"start": 5000}}}
NEW = {**OLD, "regions": {"us-east-1": 0, "eu-west-1": 1}, "regionSlots": 2}


def refusal(**server: object) -> str:
    with pytest.raises(LocalTicketsError) as refused:
        LocalTickets(**server).start().stop()  # type: ignore[arg-type]
    return str(refused.value)


def test_a_server_without_the_deployments_ledger_refuses_what_would_repeat_a_ticket(tmp_path: Path) -> None:
    main, other = tmp_path / "main", tmp_path / "other"
    main.mkdir(), other.mkdir()
    with contextlib.ExitStack() as stack:
        east, west = (stack.enter_context(running_dynalite()) for _ in range(2))
        config_file = checkout(main, OLD)
        init_ledger_file(main / "tickets.lock.json", {"tickets-counters": parse_config(OLD)})
        with LocalTickets(region="us-east-1", endpoint_url=east, config_file=config_file) as old:
            issued_east = [_post(old, "/orders?count=20") for _ in range(2)]
        older = shutil.copy(main / "tickets.lock.json", tmp_path / "older.lock.json")
        checkout(main, NEW)
        fence = fence_process(config_file, east, west)
        assert fence.returncode == 0, fence.stderr
        synthesise(config_file, NEW)
        epochs = read_ledger_file(main / "tickets.lock.json").services["tickets-counters"].epochs
        epoch = next(each for each in epochs if each.key == "orders")
        east_tickets = {t for answer in issued_east for t in answer}
        assert max(east_tickets) < epoch.fence

        # Another checkout: cdk.json alone, no ledger beside it. eu-west-1's table is new (the fence stopped the
        # lanes of the regions that had a slot): only the ledger can tell that its lanes begin above the fence.
        elsewhere_config = checkout(other, NEW)
        message = refusal(config_file=elsewhere_config, region="eu-west-1", endpoint_url=west)
        assert "--ledger PATH, or tickets.lock.json beside --config" in message, message
        message = refusal(config=NEW, region="eu-west-1", endpoint_url=west)  # --config-json
        assert "--ledger PATH" in message and "--without-ledger" in message, message
        # The ledger before the fence: it records no fence for the layout cdk.json changes.
        message = refusal(config=NEW, region="eu-west-1", endpoint_url=west, arguments=["--ledger", str(older)])
        assert "the ledger refuses this config, as synthesis would" in message and "tickets_admin fence" in message
        # Told its layouts are first ones, on a table the fence stopped: the table's records refuse it.
        message = refusal(config=NEW, region="us-east-1", endpoint_url=east, arguments=["--without-ledger"])
        assert "orders: stopped by fence" in message and "--ledger PATH" in message, message
        # A ledger with git conflict markers is refused, not warned about.
        text = (main / "tickets.lock.json").read_text()
        (other / "tickets.lock.json").write_text(f"<<<<<<< HEAD\n{text}=======\n{text}>>>>>>> branch\n")
        message = refusal(config_file=elsewhere_config, region="eu-west-1", endpoint_url=west)
        assert "the ledger is refused" in message and "git conflict markers" in message, message

        # With the deployment's ledger: only tickets above the fence.
        ledger = ["--ledger", str(main / "tickets.lock.json")]
        with LocalTickets(NEW, region="eu-west-1", endpoint_url=west, arguments=ledger) as good:
            assert min(_post(good, "/orders?count=20")) >= epoch.fence
        # Now the table holds epoch 1's lanes: a server told to serve its first layouts is refused by them.
        message = refusal(config=NEW, region="eu-west-1", endpoint_url=west, arguments=["--without-ledger"])
        assert "orders@1: orders's lanes of epoch 1 (above a fence); this server would serve epoch 0" in message


def _post(server: LocalTickets, path: str) -> list[int]:
    import urllib.request

    request = urllib.request.Request(server.url + path, method="POST", headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return list(json.loads(answer.read())["tickets"])
