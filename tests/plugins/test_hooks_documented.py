"""Every hook of the feature table is documented where a feature's author looks (docs/plugins.md),
as datasette keeps a test that fails on an undocumented hook: a hook the page does not name is
one nobody outside the code can use."""

from __future__ import annotations

import inspect
from pathlib import Path

from flightlog.plugins.specs import FeatureSpec

PAGE = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def test_every_hook_is_on_the_plugins_page() -> None:
    page = PAGE.read_text(encoding="utf-8")
    hooks = [name for name, _ in inspect.getmembers(FeatureSpec) if name.startswith("flightlog_")]
    assert len(hooks) > 20
    missing = [name for name in hooks if f"`{name}" not in page]
    assert missing == [], f"hooks docs/plugins.md does not name: {missing}"
