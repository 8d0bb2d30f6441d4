"""Two servers over one PostgreSQL store, as behind a load balancer: a run written through
either is stored once, a live stream on one server sees what the other ingests, and although
both evaluate the same alert rules, each firing and each resolution is delivered once."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest

from flightlog.server.testing import RunningServer, serve_in_thread
from flightlog.transport.sse import parse_events
from tests.alerts.conftest import FLIGHTLOG_ENV, Webhook, rules_file, wait_until
from tests.helpers import child_env

_WRITE = """
    import sys, flightlog
    run = flightlog.init(project="shared", name="{name}", resources=False)
    print(run.id, flush=True)
    sys.stdin.readline()  # the test opens a live stream on the other server first
    for step in range(20):
        run.log({{"loss": 100.0 + step}}, step=step)
        run.log_event(f"step {{step}}")
    run.finish()
"""


@pytest.fixture
def rules(tmp_path: Path, webhook: Webhook, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The rules both servers evaluate (loss above 10, sent to the webhook), with the
    FLIGHTLOG_ variables cleared."""
    for name in FLIGHTLOG_ENV:
        monkeypatch.delenv(name, raising=False)
    return rules_file(
        tmp_path,
        f"""
settings:
  interval: 0.2s
rules:
  - name: loss-high
    kind: threshold
    metric: loss
    op: ">"
    value: 10
notifiers:
  - kind: webhook
    url: {webhook.url}
""",
    )


def _serve(home: Path, postgres_uri: str, rules: Path) -> AbstractContextManager[RunningServer]:
    return serve_in_thread(home, auth=True, store_uri=postgres_uri, alerts=str(rules))


@pytest.fixture
def pair(tmp_path: Path, postgres_uri: str, rules: Path) -> Iterator[tuple[RunningServer, RunningServer]]:
    with _serve(tmp_path / "a", postgres_uri, rules) as a, _serve(tmp_path / "b", postgres_uri, rules) as b:
        yield a, b


def test_two_servers_share_one_store_and_notify_once(
    pair: tuple[RunningServer, RunningServer], tmp_path: Path, webhook: Webhook
) -> None:
    a, b = pair
    token = a.token("admin")  # tokens live in the shared store: valid on both servers
    headers = {"Authorization": f"Bearer {token}"}

    ids = []
    for name, server, other in (("via-a", a, b), ("via-b", b, a)):
        home = tmp_path / name
        env = child_env(home, FLIGHTLOG_URL=server.url, FLIGHTLOG_TOKEN=token)
        proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_WRITE.format(name=name))],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        assert proc.stdout is not None and proc.stdin is not None
        run_id = proc.stdout.readline().strip()
        ids.append(run_id)
        wait_until(
            lambda run_id=run_id, other=other: (
                httpx.get(
                    f"{other.url}/api/v1/runs/{run_id}",  # type: ignore[misc]
                    headers=headers,
                ).status_code
                == 200
            ),
            what="the run to reach the store",
        )
        messages: list[str] = []
        with httpx.stream(
            "GET",
            f"{other.url}/api/v1/runs/{run_id}/stream",
            timeout=60,
            headers={**headers, "Accept": "text/event-stream"},
        ) as response:
            proc.stdin.write("\n")
            proc.stdin.flush()
            for event in parse_events(response.iter_lines()):
                if event.event == "logs":
                    messages += [e["message"] for e in json.loads(event.data)["events"]]
                if event.event == "end":
                    break
        assert messages == [f"step {i}" for i in range(20)], "the other server streams what this one ingests"
        proc.communicate(timeout=60)
        assert proc.returncode == 0
    with httpx.Client(base_url=b.url + "/api/v1", headers=headers, timeout=30) as api:
        listed = api.get("/runs", params={"project": "shared"}).json()["runs"]
        assert sorted(r["name"] for r in listed) == ["via-a", "via-b"]
        for run_id in ids:
            points = api.get(f"/runs/{run_id}/metrics/loss").json()
            assert [p for p in points["steps"]] == list(range(20)), "every point once, whichever server took it"

    with httpx.Client(base_url=b.url + "/api/v1", headers=headers, timeout=30) as api:

        def resolved() -> list[str]:
            return sorted(a["run_id"] for a in api.get("/alerts").json()["alerts"] if a["state"] == "resolved")

        try:
            wait_until(
                lambda: resolved() == sorted(ids) and len(webhook.payloads) >= 2,
                timeout=60,
                what="each run's alert to fire, be delivered and end with its run",
            )
        except AssertionError as exc:  # what was stored and sent, so that a failure says which part failed
            alerts = [(a["run_id"], a["state"], a.get("resolved_reason")) for a in api.get("/alerts").json()["alerts"]]
            runs = [(r["id"], r["status"]) for r in api.get("/runs", params={"project": "shared"}).json()["runs"]]
            raise AssertionError(f"{exc}: alerts {alerts}, runs {runs}, {len(webhook.payloads)} payloads") from None
        assert len(api.get("/alerts").json()["alerts"]) == 2, "one episode per run, not one per server"
    _assert_each_fired_once(webhook, ids)


def test_the_other_server_takes_over_alert_evaluation_when_the_leader_stops(
    tmp_path: Path, postgres_uri: str, webhook: Webhook, rules: Path
) -> None:
    import psycopg

    def leads() -> bool:  # an advisory lock is granted: the only server up so far leads
        with psycopg.connect(postgres_uri) as conn:
            return bool(
                conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted").fetchone()[0]
            )

    leader = _serve(tmp_path / "a", postgres_uri, rules)
    a = leader.__enter__()
    try:
        wait_until(leads, what="server A to take the lead")
        with _serve(tmp_path / "b", postgres_uri, rules) as b:
            token = a.token("admin")
            first = _write(tmp_path / "one", a, token)
            wait_until(lambda: len(webhook.payloads) >= 1, timeout=60, what="the first alert, from the leader")
            leader.__exit__(None, None, None)  # the leader stops; B is left
            leader = None
            second = _write(tmp_path / "two", b, token)
            wait_until(
                lambda: {a["labels"]["run"] for p in webhook.payloads for a in p["alerts"]} == {first, second},
                timeout=60,
                what="the second run's alert from the server that took over",
            )
    finally:
        if leader is not None:
            leader.__exit__(None, None, None)
    _assert_each_fired_once(webhook, [first, second])


def _assert_each_fired_once(webhook: Webhook, run_ids: list[str]) -> None:
    """Each run's alert went out firing once, and nothing went out twice. A resolution may
    follow (send_resolved is on) when the run's end came a cycle after the firing; an alert
    that fired and ended in one cycle goes out once, as firing, with its end time."""
    delivered = [(a["labels"]["run"], a["status"]) for p in webhook.payloads for a in p["alerts"]]
    assert sorted(d for d in delivered if d[1] == "firing") == sorted((r, "firing") for r in run_ids)
    assert len(set(delivered)) == len(delivered), f"a notification went out twice: {delivered}"
    assert {r for r, _ in delivered} == set(run_ids)


def _write(home: Path, server: RunningServer, token: str) -> str:
    env = child_env(home, FLIGHTLOG_URL=server.url, FLIGHTLOG_TOKEN=token)
    script = textwrap.dedent(_WRITE.format(name=home.name))
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        input="\n",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=home.parent,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[0]
