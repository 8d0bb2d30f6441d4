"""Docs are part of the feature: generated references are current, every setting is documented,
and the README shows the two commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_generated_references_are_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_every_environment_variable_is_documented() -> None:
    from flightlog.config import VARIABLES

    text = (ROOT / "docs" / "configuration.md").read_text()
    assert [v.name for v in VARIABLES if f"`{v.name}`" not in text] == []


def test_readme_shows_the_two_commands_first() -> None:
    readme = (ROOT / "README.md").read_text()
    first_section = readme.split("\n## ", 1)[0]
    assert "make demo" in first_section and "make test" in first_section


def test_every_docs_link_resolves() -> None:
    import re

    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text()):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} → {target}")
    assert broken == []


def test_every_page_the_code_cites_exists() -> None:
    """A docstring, comment or message that names a page (docs/cli.md, README.md) names one that
    is in the repository: the code once cited a design page that was never there."""
    import re

    from tests.diagnose.corpus.load import HERE, SETS

    cited = re.compile(r"[A-Za-z0-9_./-]+\.md\b")
    # The failure corpus's data files quote third-party failure output (URLs to other projects'
    # pages among it): what they contain is data, not the code citing a page.
    corpus_data = {(HERE / f"{name}.yaml").resolve() for name in SETS}
    missing = []
    for folder in ("src", "tests", "scripts", "bench", "examples"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".yaml", ".sh") or "node_modules" in path.parts or path in corpus_data:
                continue
            for name in set(cited.findall(path.read_text(errors="replace"))):
                if not any((base / name).exists() for base in (ROOT, ROOT / "docs")):
                    missing.append(f"{path.relative_to(ROOT)} → {name}")
    assert missing == []
