"""`flightlog server --alerts FILE`: a named rules file is checked before the server starts."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import cli


def test_server_refuses_a_bad_rules_file_before_listening(tmp_path: Path) -> None:
    rules = tmp_path / "alerts.yaml"
    rules.write_text("rules:\n  - name: x\n    kind: threshold\n    op: '<'\n")
    proc = cli(tmp_path / "home", "server", "--port", "0", "--alerts", str(rules), check=False, timeout=30)
    assert proc.returncode == 1 and "error:" in proc.stderr and "alerts.yaml" in proc.stderr
    assert "listening" not in proc.stdout
    missing = cli(
        tmp_path / "home", "server", "--port", "0", "--alerts", str(tmp_path / "nope.yaml"), check=False, timeout=30
    )
    assert missing.returncode == 1 and "nope.yaml" in missing.stderr
