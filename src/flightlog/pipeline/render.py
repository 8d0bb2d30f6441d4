"""``flightlog pipeline show``: the DAG as a tree, each step with status, attempts, time, cache.

A step that needs several others is drawn under the first of them and says what else it
waits for, so the tree stays a tree and every edge is still visible. A step run more than
once (retries, resumes) lists every attempt under it, oldest first, with the pipeline attempt
it belonged to: a resume adds to the history, it never hides it.
"""

from __future__ import annotations

from typing import Any

from flightlog.cli.common import STATUS_STYLE, duration_text, short_time
from flightlog.cli.output import esc
from flightlog.timefmt import parse_time

__all__ = ["render_pipeline", "render_plan", "STEP_MARK"]

STEP_MARK = {
    "succeeded": "✓",
    "cached": "=",
    "failed": "✗",
    "skipped": "-",
    "running": ">",
    "retrying": "↻",
    "pending": "·",
    "stopped": "■",
    "killed": "■",
    "crashed": "!",
}
_STYLE = {**STATUS_STYLE, "cached": "blue", "skipped": "dim", "pending": "dim", "retrying": "yellow"}


def _label(step: dict[str, Any]) -> str:
    status = step["status"]
    parts = [
        f"[{_STYLE.get(status, '')}]{STEP_MARK.get(status, '?')} {step['name']}[/]",
        f"[{_STYLE.get(status, '')}]{status}[/]",
    ]
    if step.get("kind") == "gate":
        parts.append("[magenta]gate[/]")
    attempts = step.get("attempts") or []
    if len(attempts) > 1:
        parts.append(f"{len(attempts)} attempts")
    if step.get("duration") is not None and status != "cached":
        parts.append(duration_text(step["duration"]))
    if step.get("cached_from"):
        parts.append(f"[blue]cache hit: run {step['cached_from'][:12]}[/]")
    elif step.get("run"):
        parts.append(f"run {step['run'][:12]}")
    text = "  ".join(parts)
    if step.get("reason") and status not in ("succeeded", "cached"):
        text += f"\n[dim]{step['reason']}[/]"
    miss = step.get("cache_miss") or {}
    if miss.get("changes") and status != "cached":
        text += f"\n[yellow]ran again[/] [dim](last success: run {str(miss.get('previous_run'))[:12]})[/]: "
        text += "; ".join(esc(str(c.get("text"))) for c in miss["changes"])
    if len(attempts) > 1:
        text += "".join(f"\n{_attempt_line(a)}" for a in attempts)
    return text


def _attempt_line(attempt: dict[str, Any]) -> str:
    status = str(attempt.get("status") or "?")
    style = _STYLE.get(status, "")
    parts = [f"[dim]attempt {attempt.get('number', '?')}[/]", f"[{style}]{STEP_MARK.get(status, '?')} {status}[/]"]
    if attempt.get("category") and status != "succeeded":
        parts.append(str(attempt["category"]))
    parts.append(f"[dim]pipeline attempt {attempt.get('pipeline_attempt', 1)}[/]")
    parts.append(_when(attempt.get("started")))
    if attempt.get("duration") is not None:
        parts.append(duration_text(attempt["duration"]))
    if attempt.get("run"):
        parts.append(f"run {str(attempt['run'])[:12]}")
    return "  ".join(parts)


def _when(stamp: str | None) -> str:
    return short_time(parse_time(stamp)) if stamp else "-"


def render_pipeline(view: dict[str, Any], console: Any) -> None:
    from rich.tree import Tree

    status = view["status"]
    title = (
        f"[bold]pipeline {view['name']}[/]  run {view['run'][:12]}  "
        f"[{_STYLE.get(status, '')}]{status}[/]  attempt {view['attempt']}  started {_when(view.get('started'))}"
    )
    if view.get("attempt_started") and view["attempt_started"] != view.get("started"):
        title += f"  [dim](attempt {view['attempt']} from {_when(view['attempt_started'])})[/]"
    title += f"  {duration_text(view.get('duration'))}"
    tree = Tree(title)
    steps = {s["name"]: s for s in view["steps"]}
    nodes: dict[str, Any] = {}
    for step in view["steps"]:
        needs = step.get("needs") or []
        parent = nodes.get(needs[0]) if needs else tree
        label = _label(step)
        if len(needs) > 1:
            label += f"  [dim](also needs {', '.join(needs[1:])})[/]"
        nodes[step["name"]] = (parent or tree).add(label)
    console.print(tree)
    failure = view.get("failure") or {}
    if status == "failed" and failure.get("message"):
        console.print(f"[bold red]✗[/] {failure['message']}")  # "gate check failed: ...": said once
        for frame in failure.get("frames") or []:  # the user's innermost frame first
            where = f"{frame.get('file')}:{frame.get('line')} in {frame.get('function')}"
            console.print(f"  {where}  [bold]your code[/]" if frame.get("user") else f"  [dim]{where}[/]")
        if failure.get("step_run"):
            console.print(
                f"[dim]next: flightlog diagnose {view['run'][:12]}   flightlog logs {failure['step_run'][:12]}[/]"
            )
    cached = sum(1 for s in steps.values() if s["status"] == "cached")
    if cached:
        console.print(f"[blue]{cached} of {len(steps)} steps reused from cache[/]")


_ACTION_STYLE = {"run": "yellow", "reuse": "blue", "fail": "red"}
_ACTION_WORD = {"run": "would run", "reuse": "would be reused", "fail": "would fail"}


def render_plan(plan: dict[str, Any], console: Any) -> None:
    """``pipeline plan``: one line per step in run order, then its reasons, indented."""
    console.print(f"[bold]plan for pipeline {esc(plan['name'])}[/]  project {esc(plan['project'])}")
    for step in plan["steps"]:
        action = step["action"]
        style = _ACTION_STYLE.get(action, "")
        line = f"[{style}]{STEP_MARK['cached'] if action == 'reuse' else '>'} {esc(step['name'])}[/]  "
        line += f"[{style}]{_ACTION_WORD.get(action, action)}[/]"
        if step.get("reused_run"):
            line += f"  [blue]from run {step['reused_run'][:12]}[/]"
        elif step.get("previous_run"):
            line += f"  [dim](last success: run {step['previous_run'][:12]})[/]"
        console.print(line)
        for reason in step.get("reasons") or []:
            console.print(f"    [dim]{esc(str(reason.get('text')))}[/]")
    console.print(f"{len(plan['run'])} to run, {len(plan['reuse'])} to reuse, of {len(plan['steps'])} steps")
