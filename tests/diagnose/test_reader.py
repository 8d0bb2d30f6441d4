"""The engine reads through the one read facade: the Client opened from settings, or a Client
over a store already open (the server's path, ``Client.over``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flightlog.client import Client
from flightlog.diagnose.engine import diagnose_run
from flightlog.store.registry import open_store
from tests.helpers import run_script


@pytest.mark.embedded_only("reads the embedded store directly, as the server does")
def test_store_reader_gives_the_client_report(home: Path) -> None:
    run_script(
        home,
        """
        import flightlog
        run = flightlog.init(project="p", name="n")
        for step in range(30):
            run.log({"loss": float("nan") if step >= 20 else 1.0 / (step + 1)}, step=step)
        run.finish()
    """,
    )
    with Client(home) as c:
        run = c.runs()[0]
        via_client = c.diagnose(run.id)
        store = open_store(c.settings.store_uri)
        try:
            via_store = diagnose_run(Client.over(store, home=home), run.id)
        finally:
            store.close()
    assert via_store == via_client
    assert via_client["findings"][0]["category"] == "nan_loss"
    assert "loss became NaN at step 20" in via_client["findings"][0]["evidence"][0]["detail"]
