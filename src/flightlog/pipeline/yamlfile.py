"""Pipelines written in YAML, for ``flightlog pipeline run pipeline.yaml``::

    name: churn
    project: churn
    steps:
      prepare:
        command: python prepare.py
        outputs: [data/clean.csv]
      validate:
        needs: [prepare]
        gate:
          - {expect: expectations.yaml, data: data/clean.csv}
      train:
        needs: [validate]
        command: [python, train.py, --epochs, "3"]
        params: {lr: 0.1}
        inputs: [data/clean.csv]
        outputs: [model.npz]
        retries: 2
        retry_on: [service_unavailable]
        retry_delay: 2s
        timeout: 30m
        memory_limit: 4G

Paths (commands, inputs, outputs, suites) are relative to the file's directory, where the
steps run. Mistakes name the file, the step and the field.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from flightlog.errors import InvalidInput, NotFound
from flightlog.pipeline.spec import GateCheck, PipelineSpec, StepSpec, command_of, validate
from flightlog.timefmt import parse_duration, parse_size

__all__ = ["load_pipeline_file", "parse_pipeline", "STEP_FIELDS"]

TOP_FIELDS = ("name", "project", "steps")
STEP_FIELDS = (
    "command",
    "function",
    "gate",
    "needs",
    "params",
    "inputs",
    "outputs",
    "retries",
    "retry_on",
    "retry_delay",
    "timeout",
    "memory_limit",
    "cache",
)
GATE_FIELDS = ("expect", "data", "metric", "step", "min", "max")


def load_pipeline_file(path: str | os.PathLike[str]) -> PipelineSpec:
    p = Path(path).expanduser()
    if not p.is_file():
        raise NotFound(f"no pipeline file {p}: pass the path of a YAML pipeline (docs/pipelines.md)")
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{p}: not valid YAML: {exc}") from None
    return parse_pipeline(doc, source=str(p), workdir=str(p.resolve().parent))


def parse_pipeline(doc: Any, *, source: str = "<pipeline>", workdir: str | None = None) -> PipelineSpec:
    if not isinstance(doc, dict):
        raise InvalidInput(f"{source}: a pipeline is a mapping with name and steps")
    _unknown(doc, TOP_FIELDS, source)
    steps_doc = doc.get("steps")
    if not isinstance(steps_doc, dict) or not steps_doc:
        raise InvalidInput(
            f"{source}: steps must be a mapping of step name to step, e.g. steps: {{prepare: {{command: ...}}}}"
        )
    name = doc.get("name") or (Path(source).stem if not source.startswith("<") else "pipeline")
    steps = [_step(str(step_name), body, f"{source}: step {step_name!r}") for step_name, body in steps_doc.items()]
    project = doc.get("project")
    spec = PipelineSpec(
        name=str(name), steps=steps, project=str(project) if project else None, source=source, workdir=workdir
    )
    return validate(spec)


def _unknown(d: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    extra = [k for k in d if k not in allowed]
    if extra:
        raise InvalidInput(f"{where}: unknown field {extra[0]!r}; use {', '.join(allowed)}")


def _step(name: str, body: Any, where: str) -> StepSpec:
    if not isinstance(body, dict):
        raise InvalidInput(f"{where}: a step is a mapping with command, function or gate")
    _unknown(body, STEP_FIELDS, where)
    step = StepSpec(name=name)
    if body.get("command") is not None:
        step.command = command_of(body["command"], where)
    if body.get("function") is not None:
        step.function = str(body["function"])
    if body.get("gate") is not None:
        gates = body["gate"] if isinstance(body["gate"], list) else [body["gate"]]
        step.gate = [_gate(g, f"{where}, gate {i + 1}") for i, g in enumerate(gates)]
    step.needs = _strings(body.get("needs"), "needs", where)
    step.inputs = _strings(body.get("inputs"), "inputs", where)
    step.outputs = _strings(body.get("outputs"), "outputs", where)
    params = body.get("params") or {}
    if not isinstance(params, dict):
        raise InvalidInput(f"{where}: params must be a mapping")
    step.params = params
    retries = body.get("retries", 0)
    if not isinstance(retries, int) or isinstance(retries, bool):
        raise InvalidInput(f"{where}: retries must be a whole number")
    step.retries = retries
    if body.get("retry_on") is not None:
        step.retry_on = tuple(_strings(body["retry_on"], "retry_on", where))
    if body.get("retry_delay") is not None:
        step.retry_delay = parse_duration(str(body["retry_delay"]), what=f"{where}: retry_delay")
    if body.get("timeout") is not None:
        step.timeout = parse_duration(str(body["timeout"]), what=f"{where}: timeout")
    if body.get("memory_limit") is not None:
        step.memory_limit = parse_size(str(body["memory_limit"]), what=f"{where}: memory_limit")
    cache = body.get("cache", True)
    if not isinstance(cache, bool):
        raise InvalidInput(f"{where}: cache must be true or false")
    step.cache = cache
    return step


def _strings(value: Any, key: str, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InvalidInput(f"{where}: {key} must be a list of names")


def _gate(body: Any, where: str) -> GateCheck:
    if not isinstance(body, dict):
        raise InvalidInput(
            f"{where}: a gate check is a mapping: {{expect: FILE, data: FILE}} or {{metric: NAME, step: STEP, min: X}}"
        )
    _unknown(body, GATE_FIELDS, where)
    check = GateCheck()
    for key in ("expect", "data", "metric", "step"):
        if body.get(key) is not None:
            setattr(check, key, str(body[key]))
    for key in ("min", "max"):
        value = body.get(key)
        if value is not None:
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise InvalidInput(f"{where}: {key} must be a number")
            setattr(check, key, float(value))
    return check
