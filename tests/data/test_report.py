"""The HTML drift report: self-contained, one plot per column, every data value escaped."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from flightlog.data import drift, profile, render_drift_html

EVIL = '<script>alert("x")</script>'


def _page() -> str:
    rng = np.random.default_rng(1)
    ref = pd.DataFrame({"amount": rng.gamma(2, 30, 3000), EVIL: rng.choice(["a", EVIL, "c&d"], 3000)})
    cur = pd.DataFrame({"amount": rng.gamma(2, 30, 3000) * 3, EVIL: rng.choice(["a", EVIL, "c&d"], 3000)})
    pr, pc = profile(ref, name="ref.parquet"), profile(cur, name="<b>cur</b>")
    return render_drift_html(drift(pr, pc), pr, pc)


def test_report_has_a_plot_per_column_and_the_verdict() -> None:
    page = _page()
    assert page.startswith("<!doctype html>")
    assert page.count("<svg") == 2
    assert "Dataset drift" in page or "No dataset drift" in page
    assert "wasserstein" in page and "amount" in page
    assert page.count("<rect") > 10


def test_every_value_from_the_data_is_escaped() -> None:
    page = _page()
    assert "<script" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "c&amp;d" in page
    assert "<b>cur</b>" not in page and "&lt;b&gt;cur&lt;/b&gt;" in page


def test_report_is_self_contained() -> None:
    page = _page()
    urls = re.findall(r"https?://[^\s\"'<>]+", page)
    assert set(urls) <= {"http://www.w3.org/2000/svg"}
    assert "<link" not in page and "<img" not in page and "src=" not in page
