"""The onset of a cause: what changed between the last good run and the first bad one.

For a group's first failure, the last good run is its baseline, chosen the way ``flightlog
diagnose`` chooses one (:func:`flightlog.diagnose.selection.baseline_for`: a pinned run, else
the newest comparable run of the same name, else the best comparable run of the same script —
never a flagged one, failed, NaN or diverged; docs/troubleshooting.md). The differences in
context between the two come from the diagnosis feature's comparison (``Client.compare``,
`flightlog.diagnose.compare`), of which the onset keeps the context — code commit, command
line, package versions, data manifests (input digests), the allow-listed environment
variables, the container image, the host, the Python version — in that order: the first change
is the onset's headline. An input the first bad run never logged is a change only when that
run lived past the point where the last good one logged it: a run that died at its imports
did not lose its data.
"""

from __future__ import annotations

from typing import Any

from flightlog.diagnose.selection import baseline_for
from flightlog.models import RunInfo

__all__ = ["last_good_run", "onset_of", "context_changes", "COMMIT_TAGS"]

#: tags that name the code's revision where the runtime context has none (a CI job's own tag)
COMMIT_TAGS = ("commit", "git_commit", "git_sha", "revision")


def last_good_run(client: Any, first_bad: RunInfo) -> RunInfo | None:
    """The baseline of ``first_bad`` (see the module docstring), None when none qualifies."""
    return baseline_for(client, first_bad).run


def _change(kind: str, name: str, before: Any, after: Any, text: str) -> dict[str, Any]:
    return {"kind": kind, "name": name, "before": before, "after": after, "text": text}


def _digest(digest: Any) -> str:
    """A digest as people compare them: its first 12 hex digits, without the ``sha256:`` prefix."""
    return str(digest).split(":", 1)[-1][:12]


def _short(commit: Any) -> str:
    return str(commit or "?")[:10]


def context_changes(cmp: dict[str, Any], good: RunInfo, bad: RunInfo) -> list[dict[str, Any]]:
    """The context differences of a comparison (``compare_runs``'s document), headline first."""
    out: list[dict[str, Any]] = []
    command = cmp.get("command") or {}
    if command.get("changed"):
        before, after = command.get("baseline"), command.get("run")
        out.append(_change("command", "command", before, after, f"command: {before} → {after}"))
    code = cmp.get("code") or {}
    if code.get("changed"):
        before, after = (code.get("baseline") or {}).get("commit"), (code.get("run") or {}).get("commit")
        dirty = " (dirty)" if (code.get("run") or {}).get("dirty") else ""
        out.append(_change("commit", "commit", before, after, f"commit {_short(before)} → {_short(after)}{dirty}"))
    elif code.get("changed") is None:
        for tag in COMMIT_TAGS:
            before, after = good.tags.get(tag), bad.tags.get(tag)
            if before != after and (before or after):
                out.append(
                    _change("commit", tag, before, after, f"commit (tag {tag}) {_short(before)} → {_short(after)}")
                )
                break
    packages = cmp.get("packages") or {}
    for row in packages.get("changed", []):
        out.append(
            _change(
                "package", row["name"], row["baseline"], row["run"], f"{row['name']} {row['baseline']} → {row['run']}"
            )
        )
    for row in packages.get("added", []):
        out.append(_change("package", row["name"], None, row["version"], f"{row['name']} {row['version']} added"))
    for row in packages.get("removed", []):
        out.append(_change("package", row["name"], row["version"], None, f"{row['name']} {row['version']} removed"))
    for row in cmp.get("inputs") or []:
        if row.get("status") == "identical" or row.get("reached") is False:
            continue  # the same data, or an input the bad run died before it would have logged
        digest = row.get("digest") or {}
        before, after = digest.get("baseline"), digest.get("run")
        text = f"data {row['name']!r} {row['status']}"
        if before and after:
            text += f": {_digest(before)} → {_digest(after)}"
        out.append(_change("data", row["name"], before, after, text))
    env = cmp.get("environment") or {}
    for row in env.get("changed", []):
        name = row["name"]
        if name in ("cwd", "platform", "cpu_count"):
            continue  # where it ran from and how many cores: not a cause's context
        if name == "container":
            before = (row.get("baseline") or {}).get("image")
            after = (row.get("run") or {}).get("image")
            if before != after:
                out.append(
                    _change("image", "image", before, after, f"image {before or '(none)'} → {after or '(none)'}")
                )
            continue
        kind = "host" if name == "host" else "env"
        out.append(_change(kind, name, row["baseline"], row["run"], f"{name}: {row['baseline']!r} → {row['run']!r}"))
    for name in env.get("added", []):
        out.append(_change("env", name, None, "(set)", f"environment {name} set"))
    for name in env.get("removed", []):
        out.append(_change("env", name, "(set)", None, f"environment {name} unset"))
    py = cmp.get("python") or {}
    if py.get("changed") and py.get("run") and py.get("baseline"):
        out.append(_change("python", "python", py["baseline"], py["run"], f"python {py['baseline']} → {py['run']}"))
    order = {"commit": 0, "command": 1, "package": 2, "data": 3, "env": 4, "image": 5, "host": 6, "python": 7}
    return sorted(out, key=lambda c: order[c["kind"]])


def onset_of(client: Any, first_bad: RunInfo) -> dict[str, Any]:
    """The onset document of a group whose first failure is ``first_bad``."""
    choice = baseline_for(client, first_bad)
    good = choice.run
    doc: dict[str, Any] = {
        "first_bad": first_bad.id,
        "last_good": None,
        "changes": [],
        "summary": None,
        "choice": choice.to_dict(),
    }
    if good is None:
        doc["summary"] = f"no last good run to compare with: {choice.reason}"
        return doc
    doc["last_good"] = good.id
    cmp = client.compare(first_bad.id, good.id)
    doc["changes"] = context_changes(cmp, good, first_bad)
    doc["summary"] = (
        doc["changes"][0]["text"]
        if doc["changes"]
        else "nothing in the context changed (code, command line, packages, data, environment)"
    )
    return doc
