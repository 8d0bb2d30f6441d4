"""Evidence is redacted like every other user string (issue 18, item 14): a pipeline's stored
definition (its steps' command lines and params), anything sent to ``POST /runs/{run}/evidence``,
and evidence a writer that does not redact sends to ``/ingest``."""

from __future__ import annotations

import gzip
import sys
import textwrap
from pathlib import Path

import httpx
import msgspec

import flightlog
from tests.helpers import cli, cli_json
from tests.server.journal import Writer

GITHUB = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0" + "A1s2D3f4G5h6"
PLAIN_TOKEN = "plain-token-value-77"
API_KEY = "api-key-value-88"
URL_PASSWORD = "url-pass-99"
SECRETS = (GITHUB, PLAIN_TOKEN, API_KEY, URL_PASSWORD)
PY = sys.executable

# The step fails until the file "go" exists, then writes the arguments it was given.
STEP = """
import os, sys
if not os.path.exists("go"):
    sys.exit(3)
with open("argv.txt", "w") as f:
    f.write(" ".join(sys.argv[1:]))
"""


def _pipeline(tmp_path: Path) -> Path:
    (tmp_path / "step.py").write_text(STEP)
    path = tmp_path / "p.yaml"
    path.write_text(
        textwrap.dedent(f"""
        name: secretive
        steps:
          train:
            command: [{PY}, step.py, --token, {PLAIN_TOKEN}, --repo, "https://x:{GITHUB}@github.com/o/r"]
            params: {{api_key: {API_KEY}, db: "postgresql://u:{URL_PASSWORD}@db/x", lr: 0.1}}
    """)
    )
    return path


def _stored_bytes(home: Path) -> bytes:
    """Everything the embedded store and the journals hold, as raw bytes."""
    return b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())


def test_a_pipeline_definition_is_stored_redacted_and_resumes_with_its_secrets(home: Path, tmp_path: Path) -> None:
    path = _pipeline(tmp_path)
    first = cli(home, "pipeline", "run", str(path), "--format", "json", check=False)
    assert first.returncode != 0, first.stdout + first.stderr
    client = flightlog.Client(home=home)
    try:
        (pipeline,) = [r for r in client.runs() if r.parent_id is None]
        (definition,) = client.evidence(pipeline.id, "pipeline", "definition")
    finally:
        client.close()
    step = definition["data"]["spec"]["steps"][0]
    assert step["command"][2:] == [
        "--token",
        "[REDACTED:secret]",
        "--repo",
        "https://x:[REDACTED:github_token]@github.com/o/r",
    ]
    assert step["params"]["api_key"] == "[REDACTED:secret]"
    assert step["params"]["db"] == "postgresql://u:[REDACTED:url_password]@db/x"
    assert step["params"]["lr"] == 0.1
    if home.exists() and (home / "flightlog.db").exists():  # the embedded store (not a server)
        stored = _stored_bytes(home)
        for secret in SECRETS:
            assert secret.encode() not in stored, f"{secret} is stored raw"
    # resuming runs the step as the pipeline file says, with its real arguments
    (tmp_path / "go").write_text("")
    resumed = cli(home, "pipeline", "resume", pipeline.id, "--format", "json", check=False)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (tmp_path / "argv.txt").read_text() == f"--token {PLAIN_TOKEN} --repo https://x:{GITHUB}@github.com/o/r"


def test_resume_refuses_a_redacted_definition_whose_file_changed(home: Path, tmp_path: Path) -> None:
    path = _pipeline(tmp_path)
    cli(home, "pipeline", "run", str(path), check=False)
    (pipeline,) = [r for r in cli_json(home, "runs", "ls") if r.get("parent_id") is None]
    path.write_text(path.read_text().replace("--token", "--secret"))
    (tmp_path / "go").write_text("")
    resumed = cli(home, "pipeline", "resume", pipeline["id"], check=False)
    assert resumed.returncode != 0
    assert "secrets hidden" in resumed.stderr and "flightlog pipeline run" in resumed.stderr
    assert not (tmp_path / "argv.txt").exists()


def test_evidence_posted_to_the_server_is_stored_redacted(api: httpx.Client) -> None:
    w = Writer("e" * 32)
    body = msgspec.msgpack.encode({"records": [w.run("vision", name="ev")]})
    assert api.post("/ingest", content=body, headers={"Content-Type": "application/msgpack"}).status_code == 200
    data = {
        "api_key": API_KEY,
        "note": f"cloned with https://x:{GITHUB}@github.com/o/r",
        "workload": {"command": ["train.py", "--token", PLAIN_TOKEN]},
        "credentials": {"user": "bob"},
        "rows": [{"db": f"mysql://u:{URL_PASSWORD}@h/x"}],
        "accuracy": 0.9,
    }
    response = api.post(f"/runs/{'e' * 32}/evidence", json={"kind": "custom", "name": "probe", "data": data})
    assert response.status_code < 300, response.text
    # and a writer that does not redact, straight to ingest
    raw = w.record("evidence", kind="custom", name="raw", data={"password": PLAIN_TOKEN, "text": f"token {GITHUB}"})
    body = gzip.compress(msgspec.msgpack.encode({"records": [raw]}))
    response = api.post(
        "/ingest", content=body, headers={"Content-Type": "application/msgpack", "Content-Encoding": "gzip"}
    )
    assert response.status_code == 200 and response.json()["applied"] == 1, response.text
    listed = api.get(f"/runs/{'e' * 32}/evidence").json()["evidence"]
    by_name = {e["name"]: e["data"] for e in listed}
    assert by_name["probe"] == {
        "api_key": "[REDACTED:secret]",
        "note": "cloned with https://x:[REDACTED:github_token]@github.com/o/r",
        "workload": {"command": ["train.py", "--token", "[REDACTED:secret]"]},
        "credentials": {"user": "[REDACTED:secret]"},
        "rows": [{"db": "mysql://u:[REDACTED:url_password]@h/x"}],
        "accuracy": 0.9,
    }
    assert by_name["raw"] == {"password": "[REDACTED:secret]", "text": "token [REDACTED:github_token]"}


def test_the_sdk_redacts_evidence_it_records(home: Path) -> None:
    run = flightlog.init(project="p", resources=False)
    run.log_evidence("custom", "cfg", {"secret_key": API_KEY, "url": f"redis://:{URL_PASSWORD}@cache:6379", "n": 3})
    run.finish()
    client = flightlog.Client(home=home)
    try:
        (item,) = client.evidence(run.id, "custom", "cfg")
    finally:
        client.close()
    assert item["data"] == {
        "secret_key": "[REDACTED:secret]",
        "url": "redis://:[REDACTED:url_password]@cache:6379",
        "n": 3,
    }
