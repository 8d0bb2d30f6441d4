"""The diagnosis over HTTP: the same report as the CLI, from the server's store."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from flightlog.server.testing import serve_in_thread
from tests.helpers import child_env, cli


def test_diagnosis_comparison_and_rightsizing_endpoints(tmp_path: Path) -> None:
    with serve_in_thread(tmp_path / "server", auth=True) as server:
        token = server.token("reader")
        env = child_env(tmp_path / "home", FLIGHTLOG_URL=server.url, FLIGHTLOG_TOKEN=server.token("writer"))
        script = tmp_path / "load.py"
        script.write_text("open('/no/such/shard-00.parquet')\n")
        cli(tmp_path / "home", "run", "--project", "api", "--", sys.executable, str(script), env=env, check=False)
        cli(tmp_path / "home", "run", "--project", "api", "--", "true", env=env)
        headers = {"Authorization": f"Bearer {token}"}
        runs = httpx.get(f"{server.url}/api/v1/runs", params={"project": "api"}, headers=headers).json()
        items = runs["runs"] if isinstance(runs, dict) else runs
        failed = next(r for r in items if r["status"] == "failed")
        ok = next(r for r in items if r["status"] == "succeeded")
        report = httpx.get(f"{server.url}/api/v1/runs/{failed['id']}/diagnosis", headers=headers).json()
        assert report["run"] == failed["id"] and report["findings"][0]["category"] == "missing_file"
        assert report["findings"][0]["evidence"] and report["kind"] in ("software", "data", "infrastructure")
        comparison = httpx.get(
            f"{server.url}/api/v1/runs/{failed['id']}/comparison", params={"baseline": ok["id"]}, headers=headers
        )
        assert comparison.status_code == 200
        # without a baseline, the one a diagnosis would choose: none here (another script), and why
        missing = httpx.get(f"{server.url}/api/v1/runs/{failed['id']}/comparison", headers=headers)
        assert missing.status_code == 404, missing.text
        assert "no baseline for run" in missing.json()["error"]["message"]
        assert "no earlier run of the same name 'load.py' or script" in missing.json()["error"]["message"]
        choice = httpx.get(f"{server.url}/api/v1/runs/{failed['id']}/baseline", headers=headers).json()
        assert choice["run"] is None and choice["script"].endswith("load.py"), choice
        assert choice["reason"] in missing.json()["error"]["message"]
        assert httpx.get(f"{server.url}/api/v1/runs/{failed['id']}/rightsizing", headers=headers).status_code == 200
        assert httpx.get(f"{server.url}/api/v1/runs/{failed['id']}/diagnosis").status_code == 401
