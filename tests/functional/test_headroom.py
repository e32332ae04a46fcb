"""Headroom: how many tickets a counter's lane has left before max, and for how long at its recent rate.

The function (real Function URL events, on moto) puts the lane's `tickets_left` in every issuing request's
metrics line and, once one instance has seen the lane's `last` move over a window of RATE_WINDOW_SECONDS or
more, the metric `CounterDaysLeft` (at most once every REPORT_SECONDS per lane and instance), from the `last`
its UpdateItem already returns: no other DynamoDB call.
`.venv/bin/python -m tickets_admin list` shows each key's tickets left, and with --rate-over the tickets issued between
two reads and the time left at that rate: on dynalite, behind the local server."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

import tickets.issuer
from local_support import call, running_dynalite, write_cdk_json
from moto_deployment import COUNTER_TABLE
from tickets.issuer import RATE_WINDOW_SECONDS, REPORT_SECONDS
from tickets_admin.__main__ import main as admin_main
from tickets_admin.commands import counters as list_command
from tickets_local.server import LocalServer

EVERY_BACKEND = True  # its tests that deploy run on moto and on the memory backend (conftest.py)

# 864,601 = 601 + 864,000: after ticket 601, at one ticket a second, exactly 10 days are left.
STOCK = {"regions": {"us-east-1": 0}, "counters": {"stock": {"max": 864601}}}


class Clock:
    """time.monotonic for the issuer (and time.sleep for tickets_admin): moved only by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(tickets.issuer, "time", clock)
    return clock


def metrics_line(capsys, region, path: str, **event_args) -> dict:
    """The one EMF line the function prints for this issuing request, parsed."""
    capsys.readouterr()
    answer = region.post(path, **event_args)
    assert answer.status == 200, answer.body
    [line] = [json.loads(text) for text in capsys.readouterr().out.splitlines() if '"_aws"' in text]
    return line


def metric_names(line: dict) -> list[str]:
    [directive] = line["_aws"]["CloudWatchMetrics"]
    assert directive["Dimensions"] == [["service"]]  # never a dimension per key
    return [metric["Name"] for metric in directive["Metrics"]]


def test_days_left_is_the_lanes_tickets_left_over_its_rate_in_the_latest_window(deploy, clock, capsys):
    one, other = deploy(STOCK), deploy(STOCK)  # two instances of the function, on one table
    first = metrics_line(capsys, one, "/stock")
    assert (first["last_ticket"], first["tickets_left"]) == (1, 864600)
    assert "CounterDaysLeft" not in metric_names(first)  # no rate before a window has passed
    metrics_line(capsys, other, "/stock", query={"count": "500"})  # tickets 2..501, by the other instance
    clock.now += RATE_WINDOW_SECONDS - 1
    assert "CounterDaysLeft" not in metric_names(metrics_line(capsys, one, "/stock", query={"count": "50"}))
    clock.now += 1  # 600 s after `one` saw last 1, it sees last 601: 600 tickets in 600 s, every instance's
    with one.dynamodb_calls() as calls:
        line = metrics_line(capsys, one, "/stock", query={"count": "50"})
    assert calls == [("UpdateItem", COUNTER_TABLE)]  # the metric costs no DynamoDB call
    assert (line["last_ticket"], line["tickets_left"]) == (601, 864000)
    assert {"Name": "CounterDaysLeft", "Unit": "None"} in line["_aws"]["CloudWatchMetrics"][0]["Metrics"]
    assert line["CounterDaysLeft"] == [10.0]  # 864,000 tickets at 86,400 a day
    clock.now += REPORT_SECONDS - 30  # reported at most once a minute per lane and instance: not now
    line = metrics_line(capsys, one, "/stock")
    assert (line["tickets_left"], "CounterDaysLeft" in metric_names(line)) == (863999, False)
    clock.now += 270  # within the window the rate stays; the tickets left go on falling
    line = metrics_line(capsys, one, "/stock")
    assert (line["tickets_left"], line["CounterDaysLeft"]) == (863998, [863998 / 86400])
    clock.now += 300  # the next window: 3 tickets in the 600 s since last 601
    line = metrics_line(capsys, one, "/stock")
    assert (line["tickets_left"], line["CounterDaysLeft"]) == (863997, [863997 / (3 * 86400 / 600)])


def test_a_sharded_lane_in_a_second_region_counts_its_own_tickets_a_step_apart(deploy, clock, capsys):
    """Slot 1 of 2, shard 0 of 2: lane 2, tickets 3, 7, 11, ... (step 4) up to max 1000."""
    config = {
        "regions": {"us-east-1": 0, "eu-west-1": 1},
        "regionSlots": 2,
        "counters": {"hot": {"shards": 2, "max": 1000}},
    }
    west = deploy(config, "eu-west-1")
    west.pick_lanes(lambda lanes: lanes.sort(key=lambda lane: lane.shard))  # every request on shard 0
    line = metrics_line(capsys, west, "/hot")
    assert (line["last_ticket"], line["tickets_left"]) == (3, len(range(7, 1001, 4)))
    clock.now += RATE_WINDOW_SECONDS
    line = metrics_line(capsys, west, "/hot", query={"count": "150"})  # 150 of the lane's tickets in 600 s
    assert (line["last_ticket"], line["tickets_left"]) == (603, len(range(607, 1001, 4)))
    assert line["CounterDaysLeft"] == [99 / (150 * 86400 / 600)]  # lane tickets left / lane tickets a day


def admin_list(config_path, endpoint: str, *extra: str) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = admin_main(["list", "--config", str(config_path), "--endpoint-url", endpoint, *extra])
    return status, out.getvalue().splitlines(), err.getvalue()


@pytest.mark.slow
def test_list_rate_over_shows_the_tickets_issued_between_two_reads_and_the_time_left(tmp_path, monkeypatch):
    config_path = write_cdk_json(tmp_path, STOCK)
    with running_dynalite() as endpoint, LocalServer(config_path=config_path, endpoint_url=endpoint) as server:
        assert call(server.url, "/stock").status == 200  # ticket 1
        assert call(server.url, "/quiet").status == 200  # a key no config names, which nobody uses meanwhile

        class Waiting(Clock):
            def sleep(self, seconds: float) -> None:
                """While tickets_admin waits, callers take 600 tickets of stock through the local server."""
                for _ in range(6):
                    assert call(server.url, "/stock?count=100").status == 200
                self.now += seconds

        monkeypatch.setattr(list_command, "time", Waiting())
        status, lines, err = admin_list(config_path, endpoint, "--rate-over", "600")
        assert (status, err) == (0, "reading the table again in 600 s, for each key's rate\n")
        assert lines == [
            "key    lanes  last  step  left              issued  time left",
            "quiet  1      1     1     9007199254740990  0       -",
            "stock  1      601   1     864000            600     10 days",  # at 1 a second
        ]
        # Without --rate-over: one read, the tickets left only.
        assert admin_list(config_path, endpoint)[:2] == (
            0,
            [
                "key    lanes  last  step  left",
                "quiet  1      1     1     9007199254740990",
                "stock  1      601   1     864000",
            ],
        )
