"""The test kit: tickets_local.testing.LocalTickets (the local server in a child process, reset between
tests) and the pytest plugin built on it (tickets_local.pytest_plugin). The user-style suite in
examples/user-tests runs here from this checkout, and from a wheel install in test_user_suite.py."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from common import PLUGIN_ENTRY_POINT
from local_support import call, write_cdk_json
from tickets_client.client import TicketsClient
from tickets_client.errors import TicketsError
from tickets_local.server import LocalServer
from tickets_local.testing import DEFAULT_CONFIG, RESET_PATH, LocalTickets, LocalTicketsError

REPO = Path(__file__).resolve().parents[2]
USER_TESTS = REPO / "examples" / "user-tests"
CONFIG = {
    "regions": {"us-east-1": 0, "eu-west-1": 1},
    "regionSlots": 2,
    "counters": {"orders": {"start": 5000}, "once": {"max": 1}},
}


def run_pytest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """pytest in a process of its own, with the plugin as an installed package would register it."""
    installed = any(entry.name == PLUGIN_ENTRY_POINT for entry in importlib.metadata.entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "tickets_local.pytest_plugin"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *plugin, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def server(tickets_servers):
    running = tickets_servers(CONFIG)
    running.reset()
    return running


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["default", "configured"])
def test_the_user_style_suite_passes_from_this_checkout(suite):
    result = run_pytest("-q", suite, cwd=USER_TESTS)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout, result.stdout[-2000:]


def test_the_plugin_imports_nothing_heavy_until_a_fixture_is_used(tmp_path):
    (tmp_path / "test_light.py").write_text(
        textwrap.dedent(
            """
            import sys

            def test_nothing_heavy_is_imported(request):
                assert request.config.pluginmanager.hasplugin("tickets") or request.config.pluginmanager.hasplugin(
                    "tickets_local.pytest_plugin"
                )
                heavy = {"moto", "botocore", "boto3", "tickets_local.server", "tickets_local.testing", "tickets"}
                assert heavy.isdisjoint(sys.modules)
            """
        )
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    result = run_pytest(
        *("-q", "-p", "no:cacheprovider", "-p", "no:schemathesis", "-p", "no:hypothesispytest"),
        *("-p", "no:pytest_httpserver"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


@pytest.mark.slow
def test_reset_forgets_counters_idempotency_records_and_the_handlers_cached_state(server):
    client = TicketsClient(server.url)
    assert client.next("orders", count=3) == [5000, 5002, 5004]  # us-east-1: slot 0 of 2
    assert client.next("once") == [1]
    with pytest.raises(TicketsError) as exhausted:
        client.next("once")
    assert exhausted.value.code == "exhausted"
    replayed = call(server.url, "/orders", method="POST", headers={"Idempotency-Key": "same-key"}).json()

    server.reset()

    assert client.next("orders") == [5000]
    # The handler is new: the old one remembered `once` exhausted and would refuse without asking DynamoDB.
    assert client.next("once") == [1]
    again = call(server.url, "/orders", method="POST", headers={"Idempotency-Key": "same-key"}).json()
    assert again["ticket"] == 5002 != replayed["ticket"]  # the key's record went with the reset


@pytest.mark.slow
def test_the_factory_starts_one_server_per_config_region_and_endpoint(tickets_servers, server):
    assert tickets_servers(json.loads(json.dumps(CONFIG))) is server  # an equal config: the same server
    west = tickets_servers(CONFIG, region="eu-west-1")
    assert west is not server and west.url != server.url
    west.reset()
    assert TicketsClient(west.url).next("orders", count=2) == [5001, 5003]  # slot 1's lane
    assert "eu-west-1 (slot 1 of 2)" in west.banner


@pytest.mark.slow
def test_a_stopped_server_exits_cleanly_and_a_second_stop_does_nothing():
    tickets = LocalTickets().start()
    process = tickets._process
    assert tickets.running and TicketsClient(tickets.url).next("k") == [1]
    tickets.stop()
    assert process is not None and process.returncode == 0  # --exit-with-stdin: a clean stop, not a kill
    assert not tickets.running
    tickets.stop()
    with pytest.raises(RuntimeError, match="not running"):
        _ = tickets.url


def test_the_servers_stop_with_the_sessions_fixtures_before_the_test_loop_ends(tmp_path):
    """A plugin wrapping the test loop (pytest-cov combines its data there) finds every server stopped."""
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(
            """
            import pytest

            SERVED = []

            @pytest.hookimpl(wrapper=True)
            def pytest_runtestloop(session):
                result = yield
                print("running after the loop:", [server.running for server in SERVED])
                return result
            """
        )
    )
    (tmp_path / "test_served.py").write_text(
        "import conftest\n\ndef test_served(tickets_fresh_client, tickets_server):\n"
        "    conftest.SERVED.append(tickets_server)\n    assert tickets_fresh_client.next('orders') == [1]\n"
    )
    result = run_pytest("-q", "-s", "-p", "no:cacheprovider", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "running after the loop: [False]" in result.stdout, result.stdout[-3000:]


def test_a_reset_after_the_server_was_asked_to_stop_writes_to_no_file_of_this_process(tmp_path, monkeypatch):
    """reset() nudges the server through its stdin's descriptor: once closed, its number may be another file's."""
    tickets = LocalTickets(CONFIG).start()
    try:
        number = tickets._process.stdin.fileno()  # type: ignore[union-attr]
        tickets.ask_to_stop()
        files = [open(tmp_path / f"file-{each}", "wb") for each in range(64)]  # noqa: SIM115 (closed below)
        assert number in [file.fileno() for file in files]  # the closed stdin's number, given to another file
        monkeypatch.setattr(LocalTickets, "running", property(lambda self: True))  # as if it had not exited yet
        tickets.reset()
        for file in files:
            file.close()
        assert {path.read_bytes() for path in tmp_path.iterdir()} == {b""}
    finally:
        monkeypatch.undo()
        tickets.stop()


def test_a_bad_config_fails_the_start_with_the_servers_message():
    with pytest.raises(LocalTicketsError) as failed:
        LocalTickets({"regions": {"us-east-1": 0}, "counters": {"orders": {"start": "five"}}}).start()
    assert "tickets.counters.orders.start" in str(failed.value)
    assert "exited (1) before it listened" in str(failed.value)


@pytest.mark.slow
def test_a_key_strict_keys_refuses_names_the_config_it_came_from(tickets_servers, tmp_path):
    """The test kit's config is the one the test passed (tickets_config), not a cdk.json; the local server's
    is the file it read (`make serve`: cdk.json); a deployed function's, cdk.json (test_handler.py)."""
    strict = {**CONFIG, "strictKeys": True, "counters": {"orders": {"start": 5000}, "big": {"maxBlock": 2}}}
    kit = tickets_servers(strict)
    refused = call(kit.url, "/nobody")
    assert (refused.status, refused.json()["error"]) == (404, "not_found")
    assert "only the keys in tickets_config (and the default key) are served" in refused.json()["message"]
    too_many = call(kit.url, "/_blocks/big?count=3", method="POST").json()["message"]
    assert too_many.endswith("(maxBlock in tickets_config)") and "cdk.json" not in refused.json()["message"]
    config_file = write_cdk_json(tmp_path, strict)
    with LocalServer(config_path=config_file) as server:
        said = call(server.url, "/nobody").json()["message"]
    assert f"only the keys in {config_file} (and the default key)" in said


def test_the_default_config_is_one_region_one_lane_any_key():
    assert DEFAULT_CONFIG == {"regions": {"us-east-1": 0}, "regionSlots": 1, "strictKeys": False}


@pytest.mark.slow
def test_reset_is_off_unless_the_server_allows_it(tmp_path):
    with LocalServer(config=CONFIG) as server:
        refused = call(server.url, RESET_PATH, method="POST")
        assert (refused.status, refused.json()["error"]) == (404, "not_found")
        assert "--allow-reset" in refused.json()["message"]
    with LocalServer(config=CONFIG, allow_reset=True) as server:
        wrong = call(server.url, RESET_PATH)
        assert (wrong.status, wrong.headers["allow"]) == (405, "POST")
        assert call(server.url, RESET_PATH, method="POST").json() == {"reset": True}


@pytest.mark.slow
def test_a_reset_that_fails_is_a_json_500_and_the_server_goes_on(tmp_path, monkeypatch):
    with LocalServer(config=CONFIG, allow_reset=True) as server:
        monkeypatch.setattr(server.backend, "empty", lambda deployment: 1 / 0)
        failed = call(server.url, RESET_PATH, method="POST")
        assert (failed.status, failed.json()["error"]) == (500, "reset_failed")
        assert TicketsClient(server.url).next("orders") == [5000]


@pytest.mark.slow
def test_the_plugins_backend_option_picks_every_servers_backend_unless_a_call_names_one(tmp_path):
    (tmp_path / "test_backends.py").write_text(
        textwrap.dedent(
            """
            def backend_of(server):
                return next(line.split()[1] for line in server.banner.splitlines() if "backend:" in line)

            def test_the_pools_servers(tickets_servers, tickets_server):
                assert backend_of(tickets_server) == "moto"
                assert backend_of(tickets_servers({"regions": {"us-east-1": 0}}, backend="memory")) == "in"
            """
        )
    )
    result = run_pytest("-q", "-p", "no:cacheprovider", "--tickets-backend", "moto", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout


@pytest.mark.slow
def test_a_marked_reset_empties_the_tables_before_whatever_the_server_serves_next(tmp_path):
    """reset() only moves the server's mark (reset_mark.py): a test that makes no request costs nothing, two resets
    in a row are one, and the request after it finds empty tables on any connection, the counters listing too."""
    with LocalTickets(CONFIG) as tickets:
        client = TicketsClient(tickets.url)
        assert client.next("orders") == [5000]
        tickets.reset()
        tickets.reset()  # a test that made no request: the next test's reset is still the only one due
        assert call(tickets.url, "/_local/counters").json() == {"counters": []}  # a new connection, no invocation
        assert client.next("orders") == [5000]  # the kept connection
        assert call(tickets.url, "/orders").json()["ticket"] == 5002  # no second reset on the way
        tickets.reset()
        assert call(tickets.url, "/orders").json()["ticket"] == 5000
    with pytest.raises(RuntimeError, match="not running"):
        tickets.reset()


def test_a_reset_runs_while_the_test_sets_up_not_in_its_first_request():
    """reset() also writes a byte to the server's stdin, which has it run the marked reset at once: the log says so
    before any request."""
    with LocalTickets(CONFIG) as tickets:
        assert TicketsClient(tickets.url).next("orders") == [5000]
        tickets.reset()
        deadline = time.monotonic() + 30
        while "reset: every table emptied" not in tickets.log_tail() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert tickets.log_tail().count("reset: every table emptied") == 1, tickets.log_tail()
        assert TicketsClient(tickets.url).next("orders") == [5000]
        assert tickets.log_tail().count("reset: every table emptied") == 1  # the request found it done


@pytest.mark.slow
def test_resets_isolate_every_test_under_xdist_each_worker_with_its_own_servers(tmp_path):
    """Each pytest-xdist worker has its own server (and mark): tests spread over two workers, each taking the same
    key's first ticket after a reset, on the plugin's client or a connection of their own, all see an empty table."""
    (tmp_path / "test_isolated.py").write_text(
        textwrap.dedent(
            """
            import json
            import urllib.request

            import pytest

            @pytest.mark.parametrize("test", range(20))
            def test_the_first_ticket_is_one(tickets_fresh_server, tickets_client, test):
                if test % 2:
                    assert tickets_client.next("orders") == [1]
                else:
                    with urllib.request.urlopen(tickets_fresh_server.url + "/orders") as answer:
                        assert json.load(answer)["ticket"] == 1
                assert tickets_client.next("orders") == [2]

            @pytest.mark.parametrize("test", range(4))
            def test_a_reset_without_a_request(tickets_fresh_server, test):
                pass
            """
        )
    )
    result = run_pytest("-q", "-p", "no:cacheprovider", "-p", "xdist", "-n", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "24 passed" in result.stdout
