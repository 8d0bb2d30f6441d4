"""Alert summary templates bound their format widths and precisions (at most 1,000): a rules file
asking for more is refused with the placeholder and the limit named, when checked by the server
and when read from disk, instead of building a huge string on the event loop or answering 500;
a template that reaches rendering some other way renders without its spec."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from flightlog.alerts.config import load_config
from flightlog.alerts.templates import MAX_FORMAT_WIDTH, Template
from flightlog.alerts.yamlsource import RulesFileError
from flightlog.server.testing import RunningServer
from tests.server.conftest import auth

RULES = (
    "rules:\n  - {{name: high, kind: threshold, metric: loss, op: '>', value: 1, summary: 'loss {{value:{spec}}}'}}\n"
)


@pytest.mark.parametrize(
    ("spec", "part"),
    [(">50000000", "width"), (">1000000000000", "width"), (".1000000000000f", "precision"), ("x^1001", "width")],
)
def test_a_spec_over_the_bound_is_a_clear_problem(live: RunningServer, tmp_path: Path, spec: str, part: str) -> None:
    response = httpx.post(
        f"{live.url}/api/v1/alerts/rules/check",
        json={"text": RULES.format(spec=spec)},
        headers=auth(live.token("reader")),
        timeout=60,
    )
    assert response.status_code == 200, response.text[:300]
    body = response.json()
    assert body["ok"] is False
    [problem] = body["problems"]
    assert problem["field"] == "rules[0].summary"
    assert f"{{value:{spec}}}: the {part} is over {MAX_FORMAT_WIDTH}" in problem["message"]
    path = tmp_path / "alerts.yaml"
    path.write_text(RULES.format(spec=spec))
    with pytest.raises(RulesFileError, match=f"the {part} is over {MAX_FORMAT_WIDTH}"):
        load_config(path)


def test_specs_within_the_bound_still_format(live: RunningServer) -> None:
    response = httpx.post(
        f"{live.url}/api/v1/alerts/rules/check",
        json={"text": RULES.format(spec=">1000")},
        headers=auth(live.token("reader")),
        timeout=60,
    )
    assert response.json()["ok"] is True, response.text
    template = Template.parse("{value:>12.3f}|{value:.1000f}", ["value"])
    wide, precise = template.render({"value": 2.5}).split("|")
    assert wide == "       2.500" and len(precise) == 1002


def test_rendering_ignores_a_spec_over_the_bound() -> None:
    template = Template("{value:>20000000}", (("loss ", "value", ">20000000"), ("", None, None)))
    assert template.render({"value": 2.5}) == "loss 2.5"
