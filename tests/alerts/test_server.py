"""A real server (uvicorn on a loopback port, with auth) evaluates the runs that report to it
and serves the alerts API; the CLI reads alerts and manages silences through it."""

from __future__ import annotations

from pathlib import Path

from flightlog.server.testing import serve_in_thread
from tests.alerts.conftest import Webhook, wait_until
from tests.helpers import child_env, cli, cli_json, run_script


def test_the_server_evaluates_its_runs_and_serves_alerts(ahome: Path, tmp_path: Path, webhook: Webhook) -> None:
    server_home = tmp_path / "server"
    server_home.mkdir()
    (server_home / "alerts.yaml").write_text(f"""
settings:
  interval: 0.2s
rules:
  - name: keeps-failing
    kind: consecutive_failures
    count: 2
  - name: loss-nan
    kind: non_finite
    severity: critical
notifiers:
  - kind: webhook
    url: {webhook.url}
""")
    with serve_in_thread(server_home, auth=True) as server:
        env = child_env(ahome, FLIGHTLOG_URL=server.url, FLIGHTLOG_TOKEN=server.token("admin", name="tests"))
        for _ in range(2):
            run_script(
                ahome,
                """
                import flightlog
                run = flightlog.init(project="remote", name="job")
                run.log({"loss": float("nan")}, step=0)
                run.finish("failed")
            """,
                env=env,
            )
        wait_until(lambda: len(webhook.alerts("firing")) >= 3, what="three alerts from the server")
        assert sorted(rule for rule, _, _ in webhook.alerts("firing")) == ["keeps-failing", "loss-nan", "loss-nan"]

        firing = cli_json(ahome, "alerts", "ls", "--rule", "keeps-failing", env=env)
        assert [(a["rule"], a["state"], a["labels"]) for a in firing] == [
            ("keeps-failing", "firing", {"project": "remote", "name": "job"})
        ]
        run = firing[0]["run_id"]
        assert {a["rule"] for a in cli_json(ahome, "alerts", "ls", "--run", run, env=env)} == {
            "keeps-failing",
            "loss-nan",
        }
        assert any(e["event"] == "notified" for e in cli_json(ahome, "alerts", "history", "--run", run, env=env))

        silence = cli_json(ahome, "alerts", "silence", "loss-*", "--for", "1h", env=env)
        assert [s["id"] for s in cli_json(ahome, "alerts", "silences", env=env)] == [silence["id"]]
        cli(ahome, "alerts", "unsilence", silence["id"], env=env)
        assert cli_json(ahome, "alerts", "silences", env=env) == []

        reader = child_env(ahome, FLIGHTLOG_URL=server.url, FLIGHTLOG_TOKEN=server.token("reader", project="other"))
        assert cli_json(ahome, "alerts", "ls", env=reader) == []  # a token of another project sees none
        denied = cli(ahome, "alerts", "silence", "x", "--for", "1h", env=reader, check=False)
        assert denied.returncode == 1 and "error:" in denied.stderr
