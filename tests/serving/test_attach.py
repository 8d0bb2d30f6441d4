"""attach(): bad configuration is a clear error before anything is recorded; the decorator
records sync and async callables; a full buffer drops and counts; the import stays light."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from flightlog import Client, serving
from flightlog.server.testing import serve_in_thread
from tests.helpers import child_env, cli, cli_json, run_script


def _attach_fails(home: Path, call: str, **env: str) -> str:
    proc = run_script(
        home,
        f"""
        from flightlog import serving
        try:
            {call}
        except Exception as exc:
            print(type(exc).__name__, exc)
        else:
            print("attached")
    """,
        env=child_env(home, **env),
    )
    return proc.stdout.strip()


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            "serving.attach(model='fraud:3', endpoint='fraud-api', inputs=['amount', 'password'])",
            "'password' looks like a secret",
        ),
        ("serving.attach(model='fraud:3', endpoint='fraud-api', inputs='amount')", "must be a list of field names"),
        ("serving.attach(model='fraud:3', endpoint='fraud-api', inputs=['amount', 3])", "3 is not a field name"),
        ("serving.attach(model='fraud:3', endpoint='fraud-api', sample=1.5)", "not a share between 0 and 1"),
        ("serving.attach(model='fraud:3', endpoint='')", "name the endpoint"),
    ],
)
def test_a_bad_configuration_is_refused_and_nothing_is_recorded(tmp_path: Path, call: str, expected: str) -> None:
    home = tmp_path / "home"
    out = _attach_fails(home, call)
    assert out.startswith("InvalidInput") and expected in out, out
    assert not (home / "journal").exists() or not list((home / "journal").iterdir())
    with Client(home) as client:
        assert client.runs() == []


def test_a_bad_sampling_rate_in_the_environment_is_refused(tmp_path: Path) -> None:
    out = _attach_fails(
        tmp_path / "home", "serving.attach(model='fraud:3', endpoint='fraud-api')", FLIGHTLOG_SERVING_SAMPLE="often"
    )
    assert out.startswith("InvalidInput") and "FLIGHTLOG_SERVING_SAMPLE='often'" in out, out


def test_a_token_that_cannot_write_the_project_is_refused_before_anything_is_recorded(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path / "srv", auth=True) as srv:
        token = srv.token("writer", project="other")
        home = tmp_path / "home"
        out = _attach_fails(
            home,
            "serving.attach(version='3', endpoint='fraud-api', project='fraud')",
            FLIGHTLOG_URL=srv.url,
            FLIGHTLOG_TOKEN=token,
        )
        assert out.startswith("Forbidden") and "fraud" in out, out
        assert srv.app.state.store.search_runs() == []
        assert not (home / "journal").exists() or not list((home / "journal").glob("*.journal"))


def test_the_decorator_records_sync_and_async_calls_and_errors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_script(
        home,
        """
        import asyncio
        from flightlog import serving
        replica = serving.attach(version="7", endpoint="fraud-batch", project="fraud", inputs=["amount"], sample=1.0)

        @serving.track
        def predict(features):
            if features["amount"] < 0:
                raise ValueError("negative amount")
            return {"score": features["amount"] / 100}

        @serving.track
        async def apredict(amount, user):
            return amount / 100

        for i in range(5):
            predict({"amount": i, "user": "u%d" % i}, request_id="r%d" % i)
        try:
            predict({"amount": -1, "user": "bad"}, request_id="r-bad")
        except ValueError:
            pass
        else:
            raise SystemExit("the exception was swallowed")
        print(asyncio.run(apredict(50, user="v")))
        serving.log_label("r2", "fraud")
    """,
    )
    with Client(home) as client:
        rows = {r["request_id"]: r for r in serving.predictions(client, "fraud-batch")}
        assert {f"r{i}" for i in range(5)} | {"r-bad"} <= set(rows) and len(rows) == 7
        assert rows["r2"]["inputs"] == {"amount": 2} and set(rows["r2"]["input_hashes"]) == {"user"}
        assert (
            rows["r2"]["output"] == {"score": 0.02} and rows["r2"]["label"] == "fraud" and rows["r2"]["version"] == "7"
        )
        assert rows["r-bad"]["status"] == 500 and rows["r-bad"]["error"] == "ValueError"
        by_async = [r for k, r in rows.items() if not k.startswith("r")]
        assert by_async[0]["inputs"] == {"amount": 50} and by_async[0]["output"] == 0.5
        aggs = serving.aggregates(client, "fraud-batch")
        assert sum(a["requests"] for a in aggs) == 7 and sum(a["errors"] for a in aggs) == 1
        run = client.runs(project="fraud")[0]
        assert run.name == "serve fraud-batch@prod" and run.status == "succeeded"
    listed = cli_json(home, "serving", "predictions", "fraud-batch")
    assert {r["request_id"]: r["label"] for r in listed}["r2"] == "fraud"
    (replica,) = cli_json(home, "serving", "replicas", "fraud-batch")
    assert replica["state"] == "gone" and replica["status"] == "succeeded" and replica["version"] == "7"
    stats = cli_json(home, "serving", "stats", "fraud-batch")
    assert sum(s["requests"] for s in stats) == 7
    assert sum(s["requests"] for s in cli_json(home, "serving", "stats", "fraud-batch", "--env", "prod")) == 7
    assert cli_json(home, "serving", "replicas", "fraud-batch", "--env", "staging") == []
    elsewhere = cli(home, "serving", "predictions", "fraud-batch", "--env", "staging").stdout
    assert "no prediction records for 'fraud-batch' in 'staging'" in elsewhere
    exact = [s["p50_ms"] for s in stats] + [r["latency_ms"] for r in listed]
    assert any(len(repr(v).split(".")[-1]) > 2 for v in exact)  # the JSON keeps every digit
    for command in ("stats", "predictions"):
        table = cli(home, "serving", command, "fraud-batch", env={**child_env(home), "COLUMNS": "250"}).stdout
        numbers = re.findall(r"\d+\.\d+", re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "", table))  # times aside
        assert numbers, table
        # a latency reads 0.00209 or 4.57, not 4.5678912: 3 significant digits, or 2 decimals
        long = [n for n in numbers if len(n.replace(".", "").lstrip("0")) > 3 and len(n.split(".")[1]) > 2]
        assert long == [], table
    bad = cli(home, "serving", "stats", "fraud-batch", "--since", "yesterday-ish", check=False)
    assert bad.returncode == 1 and "since" in bad.stderr.lower() and "Traceback" not in bad.stderr


def test_a_full_buffer_drops_and_counts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_script(
        home,
        """
        from flightlog import serving
        replica = serving.attach(version="1", endpoint="tiny", buffer_limit=10, interval=3600, sample=0.0)
        for i in range(25):
            replica.record(0.0, 0.001, 200, None)
    """,
    )
    with Client(home) as client:
        aggs = serving.aggregates(client, "tiny")
        assert sum(a["requests"] for a in aggs) == 10 and sum(a["dropped"] for a in aggs) == 15
        run = client.runs()[0]
        assert client.metrics(run)["serving.dropped"].last == 15


def test_importing_serving_is_light() -> None:
    code = (
        "import sys; from flightlog import serving; "
        "print(json.dumps(sorted(m for m in ('starlette', 'uvicorn', 'numpy', 'flightlog.serving.middleware') if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == []
    assert serving.ServingMiddleware.__module__ == "flightlog.serving.middleware"


def test_labels_are_compared_with_the_output_field_that_label_field_names(tmp_path: Path) -> None:
    """A model that answers a mapping ({"fraud": ..., "score": ...}): live cohort metrics compare
    each label with the field ``attach(label_field=...)`` names, not with the whole answer."""
    from flightlog.data.live import live_cohorts, prediction_rows

    home = tmp_path / "home"
    run_script(
        home,
        """
        from flightlog import serving
        serving.attach(version="2", endpoint="fraud-map", project="fraud", inputs=["country"], sample=1.0,
                       label_field="fraud")

        @serving.track
        def predict(features):
            return {"fraud": features["amount"] > 50, "score": features["amount"] / 100}

        for i in range(40):
            predict({"amount": i * 5, "country": "BR" if i % 2 else "US"}, request_id=f"r{i}")
            serving.log_label(f"r{i}", i * 5 > 50 if i % 2 == 0 else False)  # BR: every fraud labelled wrong
    """,
    )
    with Client(home) as client:
        rows = prediction_rows(serving.predictions(client, "fraud-map"))
    assert len(rows) == 40 and all(isinstance(r.output, bool) for r in rows)
    evaluation = live_cohorts(rows, ["country"])
    assert evaluation is not None
    by_country = {c["value"]: c["metrics"]["accuracy"] for c in evaluation["cohorts"]}
    assert by_country["US"] == 1.0 and by_country["BR"] < 0.6, by_country
    assert "label_field" in _attach_fails(home, "serving.attach(model='fraud:2', endpoint='x', label_field='')")


def test_an_output_allow_list_keeps_the_listed_fields_and_hashes_the_rest(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_script(
        home,
        """
        from flightlog import serving
        serving.attach(version="1", endpoint="recs", project="shop", inputs=["user_segment"], outputs=["items"],
                       sample=1.0)

        @serving.track
        def recommend(features):
            return {"items": ["a", "b"], "email": "carol@example.com", "reason": "bought before"}

        for i in range(3):
            recommend({"user_segment": "new", "user": f"u{i}"}, request_id=f"r{i}")
        try:
            serving.attach(version="1", endpoint="x", outputs="items")
        except Exception as exc:
            print(type(exc).__name__, exc)
    """,
    )
    with Client(home) as client:
        rows = serving.predictions(client, "recs")
        aggs = serving.aggregates(client, "recs")
        run = client.runs(project="shop")[0]
    assert len(rows) == 3 and all(r["output"] == {"items": ["a", "b"]} for r in rows)
    assert set(rows[0]["output_hashes"]) == {"email", "reason"}
    assert set(sum((list(a["outputs"]["fields"]) for a in aggs), [])) <= {"items"}, "only listed fields are counted"
    assert run.params["serving.outputs"] == ["items"] and run.params["serving.redact_personal"] is True
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert b"carol@example.com" not in stored and b"bought before" not in stored


def test_the_servers_log_lines_are_recorded_redacted_and_not_echoed_raw(tmp_path: Path) -> None:
    """capture_logs records the app's log lines on the replica run (redacted) and writes nothing
    of its own: no second, unredacted JSON copy of every line on the server's stdout (which a
    container platform keeps), and no extra write on the request path."""
    home = tmp_path / "home"
    proc = run_script(
        home,
        """
        import logging
        from flightlog import serving
        serving.attach(version="1", endpoint="loans", project="credit", inputs=["income"])
        log = logging.getLogger("loans-api")
        log.setLevel(logging.INFO)
        for i in range(3):
            log.info("scored applicant dora%d@example.com", i)
    """,
    )
    assert "example.com" not in proc.stdout and '"component"' not in proc.stdout, proc.stdout
    assert "example.com" not in proc.stderr, proc.stderr
    with Client(home) as client:
        run = client.runs(project="credit")[0]
        lines = [e.message for e in client.logs(run.id) if e.component == "loans-api"]
    assert lines == ["scored applicant [REDACTED:email]"] * 3, lines
