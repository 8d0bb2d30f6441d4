"""``log_artifact`` at the call (issue 18, items 18 and 23): a directory's symbolic links that
leave it are not followed unless asked, and say so; a bad name, a device or a FIFO is refused
with a clear error instead of being accepted and dropped (or raising IndexError)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import flightlog


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    secret = tmp_path / "outside" / "credentials"
    secret.parent.mkdir()
    secret.write_text("aws_secret_access_key = not-for-the-artifact-store\n")
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / "weights.bin").write_bytes(b"\x00" * 64)
    (model / "sub" / "config.json").write_text("{}")
    (model / "creds").symlink_to(secret)  # points outside: not followed
    (model / "sub" / "up").symlink_to(secret.parent, target_is_directory=True)  # a directory outside
    (model / "latest.bin").symlink_to(model / "weights.bin")  # stays inside: copied
    return model, secret


def _stored(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (home / "artifacts").rglob("*") if p.is_file())


def test_symlinks_out_of_a_directory_are_skipped_and_reported(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, _ = _tree(tmp_path)
    run = flightlog.init(project="a", resources=False)
    result = run.log_artifact(model)
    run.finish()
    assert sorted(f["path"] for f in result["files"]) == [
        "model/latest.bin",
        "model/sub/config.json",
        "model/weights.bin",
    ]
    assert result["skipped_symlinks"] == ["creds", "sub/up"]
    err = capsys.readouterr().err
    assert "skipped 2 symbolic link(s) pointing outside the directory (creds, sub/up)" in err
    assert "follow_symlinks=True" in err
    client = flightlog.Client(home=home)
    try:
        logs = [e for e in client.logs(run.id) if e.component == "flightlog"]
        artifacts = {a.path: a for a in client.artifacts(run.id)}
    finally:
        client.close()
    assert any("skipped 2 symbolic link(s)" in e.message for e in logs)
    assert "model/creds" not in artifacts and "model/sub/up/credentials" not in artifacts
    if (home / "artifacts").exists():
        assert b"not-for-the-artifact-store" not in _stored(home)


def test_symlinks_are_followed_when_asked(home: Path, tmp_path: Path) -> None:
    model, _ = _tree(tmp_path)
    run = flightlog.init(project="a", resources=False)
    result = run.log_artifact(model, follow_symlinks=True)
    run.finish()
    assert sorted(f["path"] for f in result["files"]) == [
        "model/creds",
        "model/latest.bin",
        "model/sub/config.json",
        "model/sub/up/credentials",
        "model/weights.bin",
    ]
    assert "skipped_symlinks" not in result


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../../x", "'..' part"),
        ("/etc/cron.d/x", "is absolute"),
        ("a\x00b", "control characters"),
        ("dir/", "empty"),
        ("a\\b", "backslash"),
    ],
)
def test_a_bad_artifact_name_is_refused_at_the_call(home: Path, tmp_path: Path, name: str, problem: str) -> None:
    f = tmp_path / "w.bin"
    f.write_bytes(b"1")
    run = flightlog.init(project="a", resources=False)
    try:
        with pytest.raises(ValueError, match=problem):
            run.log_artifact(f, name=name)
        assert run.log_artifact(f, name="models/w.bin")["path"] == "models/w.bin"  # a good one still goes in
    finally:
        run.finish()


def test_a_device_or_a_fifo_is_refused_with_a_clear_error(home: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    run = flightlog.init(project="a", resources=False)
    try:
        with pytest.raises(ValueError, match=r"not a regular file or a directory \(a device\)"):
            run.log_artifact("/dev/zero")
        with pytest.raises(ValueError, match=r"not a regular file or a directory \(a named pipe"):
            run.log_artifact(fifo)
    finally:
        run.finish()


def test_a_symlink_loop_is_a_clear_error(home: Path, tmp_path: Path) -> None:
    """Issue 31, item 11: a loop of symbolic links surfaced as pathlib's bare RuntimeError; now
    it is the same kind of clear refusal as every other bad path, and the run goes on."""
    first, second = tmp_path / "loop-a", tmp_path / "loop-b"
    first.symlink_to(second)
    second.symlink_to(first)
    run = flightlog.init(project="a", resources=False)
    try:
        with pytest.raises(ValueError, match=r"loop-a is a loop of symbolic links") as refused:
            run.log_artifact(first)
        assert not isinstance(refused.value, RuntimeError)
        (tmp_path / "fine.txt").write_text("ok")
        assert run.log_artifact(tmp_path / "fine.txt")["path"] == "fine.txt"  # the run still logs
    finally:
        run.finish()
