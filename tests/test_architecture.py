"""The layer rule of docs/architecture.md holds: the import contracts pass, and the figures behind them.

`make lint` runs the same check; here it also guards a branch whose tests run without lint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))


def test_the_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, env=_env(),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "Contracts: 6 kept, 0 broken." in result.stdout


def test_no_package_cycle_or_unlisted_upward_import_is_left() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "import_graph.py"), "--json"], env=_env(),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["package_cycles_without_the_exceptions"] == []
    assert figures["upward_imports_not_in_the_contract"] == []
