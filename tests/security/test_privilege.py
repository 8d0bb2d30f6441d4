"""Privilege and isolation between projects (issue 18, items 1-3): a project admin manages its
own project's tokens only, a project writer cannot end a global silence, and a run of another
project answers exactly as a run that does not exist, whatever the id or prefix probed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx

from flightlog.server.testing import RunningServer
from flightlog.transport import HttpStore
from tests.server.conftest import auth, error_of
from tests.server.journal import Writer


def _client(live: RunningServer, secret: str) -> httpx.Client:
    return httpx.Client(base_url=live.url + "/api/v1", headers=auth(secret), timeout=30)


def test_a_project_admin_manages_its_own_projects_tokens_only(live: RunningServer, token: Callable[..., str]) -> None:
    root = _client(live, token("admin"))
    made = {p: root.post("/tokens", json={"role": "reader", "project": p}).json() for p in ("vision", "audio")}
    global_reader = root.post("/tokens", json={"role": "reader"}).json()
    with _client(live, token("admin", "vision")) as vision_admin:
        # never an admin (or anything) beyond its project
        for body in (
            {"role": "admin", "project": None},
            {"role": "reader", "project": None},
            {"role": "admin", "project": "audio"},
            {"role": "writer", "project": "audio"},
        ):
            refused = vision_admin.post("/tokens", json=body)
            assert refused.status_code == 403, (body, refused.text)
            assert error_of(refused)["code"] == "forbidden" and "vision" in error_of(refused)["message"]
        # tokens of its own project, up to its own role; a token without "project" is of its project
        own = vision_admin.post("/tokens", json={"role": "admin", "project": "vision"})
        assert own.status_code == 201 and own.json()["project"] == "vision"
        implicit = vision_admin.post("/tokens", json={"role": "writer"})
        assert implicit.status_code == 201 and implicit.json()["project"] == "vision"
        with _client(live, implicit.json()["token"]) as writer:
            assert writer.get("/whoami").json()["project"] == "vision"
        # it lists its project's tokens only
        listed = vision_admin.get("/tokens").json()["tokens"]
        assert {t["project"] for t in listed} == {"vision"}
        assert made["vision"]["id"] in {t["id"] for t in listed} and made["audio"]["id"] not in {
            t["id"] for t in listed
        }
        # another project's token, or a global one, is not there to revoke (the same 404 as a made-up id)
        for other in (made["audio"]["id"], global_reader["id"], "0123456789ab"):
            refused = vision_admin.delete(f"/tokens/{other}")
            assert refused.status_code == 404, refused.text
            assert "audio" not in refused.text
        with _client(live, made["audio"]["token"]) as audio_reader:
            assert audio_reader.get("/whoami").status_code == 200  # still valid
        assert vision_admin.delete(f"/tokens/{made['vision']['id']}").status_code == 200
    # a global admin still does everything
    assert {t["project"] for t in root.get("/tokens").json()["tokens"]} >= {"vision", "audio", None}
    assert root.delete(f"/tokens/{made['audio']['id']}").status_code == 200
    assert root.post("/tokens", json={"role": "admin"}).status_code == 201
    root.close()


def test_a_project_writer_cannot_end_a_global_silence(live: RunningServer, token: Callable[..., str]) -> None:
    with _client(live, token("writer")) as everyone, _client(live, token("writer", "vision")) as vision:
        everywhere = everyone.post("/alerts/silences", json={"rule": "gpu-idle", "for": "2h"}).json()
        ours = vision.post("/alerts/silences", json={"rule": "gpu-idle", "for": "2h"}).json()
        assert ours["labels"]["project"] == "vision" and "project" not in everywhere["labels"]
        refused = vision.delete(f"/alerts/silences/{everywhere['id']}")
        assert refused.status_code == 404, refused.text
        assert error_of(refused)["message"] == error_of(vision.delete("/alerts/silences/nosuchsilence"))[
            "message"
        ].replace("nosuchsilence", everywhere["id"])
        active = {s["id"] for s in everyone.get("/alerts/silences").json()["silences"]}
        assert everywhere["id"] in active  # still in effect
        assert vision.delete(f"/alerts/silences/{ours['id']}").status_code == 200
        assert everyone.delete(f"/alerts/silences/{everywhere['id']}").status_code == 200


def test_probing_ids_and_prefixes_of_another_project_learns_nothing(
    live: RunningServer, token: Callable[..., str], tmp_path: Path
) -> None:
    store = HttpStore(live.url, token=token("admin"), home=tmp_path / "seed")
    store.ingest(
        [Writer("abc100vision").run("vision"), Writer("abc200audio").run("audio"), Writer("abc201audio").run("audio")]
    )
    store.close()
    base = live.url + "/api/v1"
    vision = auth(token("reader", "vision"))

    def answer(path: str) -> tuple[int, str]:
        r = httpx.get(base + path, headers=vision)
        return r.status_code, r.text

    # a full id, and a unique prefix, of another project: the very answer of an id nobody has
    for ref, nobody in (("abc200audio", "zzz200audio"), ("abc20", "zzz20"), ("abc201", "zzz201")):
        for path in (
            "/runs/{}",
            "/runs/{}/logs",
            "/runs/{}/metrics",
            "/runs/{}/stream",
            "/runs/{}/context",
            "/runs/{}/notes",
            "/runs/{}/artifacts",
            "/runs/{}/children",
            "/alerts?run={}",
        ):
            status, text = answer(path.format(ref))
            expected_status, expected_text = answer(path.format(nobody))
            assert status == expected_status == 404, (path, ref, text)
            assert text == expected_text.replace(nobody, ref), (path, text, expected_text)
            assert "audio" not in text.replace(ref, ""), text
    # a prefix shared with another project's runs is unique among the caller's own
    status, text = answer("/runs/abc")
    assert status == 200 and '"abc100vision"' in text and "abc200" not in text
    # an admin of every project still sees the ambiguity (and the matches)
    ambiguous = httpx.get(base + "/runs/abc", headers=auth(token("reader")))
    assert ambiguous.status_code == 400 and error_of(ambiguous)["code"] == "ambiguous_id"
    writes = httpx.post(base + "/runs/abc20/notes", json={"text": "hi"}, headers=auth(token("writer", "vision")))
    assert writes.status_code == 404 and "audio" not in writes.text.replace("abc20", "")
