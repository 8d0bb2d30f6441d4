"""Pipeline definitions: every mistake is a clear error before anything runs."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from tests.helpers import cli

import flightlog
from flightlog.errors import InvalidInput, NotFound
from flightlog.pipeline import load_pipeline_file, parse_pipeline
from flightlog.pipeline.dag import find_cycle, topological_order

PY = sys.executable


def write(tmp_path: Path, text: str, name: str = "pipeline.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_order_follows_dependencies_and_keeps_declared_order_for_ties() -> None:
    assert topological_order({"train": ["prep"], "prep": [], "eval": ["train"], "lint": []}) == [
        "prep",
        "lint",
        "train",
        "eval",
    ]


def test_a_cycle_is_an_error_naming_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        name: loop
        steps:
          a: {{command: [{PY}, -c, pass], needs: [c]}}
          b: {{command: [{PY}, -c, pass], needs: [a]}}
          c: {{command: [{PY}, -c, pass], needs: [b]}}
          d: {{command: [{PY}, -c, pass]}}
    """,
    )
    with pytest.raises(InvalidInput) as err:
        load_pipeline_file(path)
    assert "cycle" in err.value.message
    cycle = err.value.message.split("cycle: ")[1].split(";")[0].split(" -> ")
    assert cycle[0] == cycle[-1] and sorted(set(cycle)) == ["a", "b", "c"]
    assert find_cycle({"a": ["b"], "b": []}) is None


def test_unknown_dependency_names_the_step_and_the_known_steps(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        steps:
          train: {{command: [{PY}, -c, pass], needs: [prepare]}}
    """,
    )
    with pytest.raises(InvalidInput, match=r"step 'train': needs unknown step 'prepare'; the steps are train"):
        load_pipeline_file(path)


def test_missing_command_is_an_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        steps:
          prep: {command: ./no_such_script.sh}
          train: {command: no-such-program-flightlog --x}
    """,
    )
    with pytest.raises(InvalidInput, match=r"step 'prep': command './no_such_script.sh' does not exist"):
        load_pipeline_file(path)
    path = write(
        tmp_path,
        """
        steps:
          train: {command: no-such-program-flightlog --x}
    """,
    )
    with pytest.raises(InvalidInput, match=r"command 'no-such-program-flightlog' was not found on PATH"):
        load_pipeline_file(path)
    path = write(
        tmp_path,
        """
        steps:
          train: {needs: []}
    """,
    )
    with pytest.raises(InvalidInput, match=r"give exactly one of command, function or gate \(it has none\)"):
        load_pipeline_file(path)


def test_a_function_step_whose_module_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"step 'train': function module 'no_such_steps_module' was not found"):
        parse_pipeline({"steps": {"train": {"function": "no_such_steps_module:train"}}}, workdir=str(tmp_path))
    with pytest.raises(InvalidInput, match=r"function file 'steps.py' does not exist"):
        parse_pipeline({"steps": {"train": {"function": "steps.py:train"}}}, workdir=str(tmp_path))
    (tmp_path / "my_steps.py").write_text("def train():\n    pass\n")
    spec = parse_pipeline({"steps": {"train": {"function": "my_steps:train"}}}, workdir=str(tmp_path))
    assert spec.step("train").kind == "function"


def test_gate_naming_an_unknown_suite_is_an_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        steps:
          prep: {{command: [{PY}, -c, pass]}}
          check:
            needs: [prep]
            gate: [{{expect: missing-suite.yaml, data: clean.csv}}]
    """,
    )
    with pytest.raises(InvalidInput, match=r"step 'check': gate names unknown suite 'missing-suite.yaml'"):
        load_pipeline_file(path)


def test_gate_metric_must_read_an_upstream_step(tmp_path: Path) -> None:
    doc = {
        "steps": {
            "evaluate": {"command": [PY, "-c", "pass"]},
            "quality": {"gate": [{"metric": "acc", "step": "evaluate", "min": 0.8}]},
        }
    }
    with pytest.raises(InvalidInput, match="add it to needs"):
        parse_pipeline(doc, workdir=str(tmp_path))
    doc["steps"]["quality"]["gate"][0]["step"] = "nope"  # type: ignore[index]
    with pytest.raises(InvalidInput, match="gate reads step 'nope', which is not a step"):
        parse_pipeline(doc, workdir=str(tmp_path))


def test_unknown_fields_and_bad_values_name_the_field(tmp_path: Path) -> None:
    base = {"command": [PY, "-c", "pass"]}
    with pytest.raises(InvalidInput, match=r"unknown field 'retrys'; use command"):
        parse_pipeline({"steps": {"a": {**base, "retrys": 2}}}, workdir=str(tmp_path))
    with pytest.raises(InvalidInput, match=r"retry_on bad_idea is not a failure category"):
        parse_pipeline({"steps": {"a": {**base, "retry_on": ["bad_idea"]}}}, workdir=str(tmp_path))
    with pytest.raises(InvalidInput, match="timeout"):
        parse_pipeline({"steps": {"a": {**base, "timeout": "soon"}}}, workdir=str(tmp_path))
    with pytest.raises(NotFound, match="no pipeline file"):
        load_pipeline_file(tmp_path / "nope.yaml")


def test_yaml_fields_reach_the_spec(tmp_path: Path) -> None:
    (tmp_path / "expect.yaml").write_text("row_count: {min: 1}\n")
    path = write(
        tmp_path,
        f"""
        name: churn
        project: p
        steps:
          prep: {{command: "{PY} -c pass", outputs: [clean.csv]}}
          check: {{needs: [prep], gate: [{{expect: expect.yaml, data: clean.csv}}]}}
          train:
            needs: [check]
            command: [{PY}, -c, pass]
            params: {{lr: 0.1}}
            inputs: [clean.csv]
            retries: 2
            retry_on: [service_unavailable]
            retry_delay: 2s
            timeout: 30m
            memory_limit: 1G
    """,
    )
    spec = load_pipeline_file(path)
    train = spec.step("train")
    assert (train.retries, train.retry_on, train.retry_delay, train.timeout) == (
        2,
        ("service_unavailable",),
        2.0,
        1800.0,
    )
    assert train.memory_limit == 1 << 30 and train.params == {"lr": 0.1}
    assert spec.step("prep").command == [PY, "-c", "pass"]
    assert spec.step("check").kind == "gate" and spec.workdir == str(tmp_path.resolve())
    assert spec.order() == ["prep", "check", "train"]
    assert type(spec).from_dict(spec.to_dict()).to_dict() == spec.to_dict()


def _nested_step() -> object:
    @flightlog.step
    def inner() -> None:
        pass

    return inner


def test_python_steps_must_be_importable_functions() -> None:
    with pytest.raises(InvalidInput, match="top level of a module"):
        _nested_step()


def test_python_pipeline_validates_like_yaml(tmp_path: Path) -> None:
    pipe = flightlog.Pipeline("p", workdir=tmp_path)
    pipe.add("a", [PY, "-c", "pass"], needs=["b"]).add("b", [PY, "-c", "pass"], needs=["a"])
    with pytest.raises(InvalidInput, match="cycle"):
        pipe.spec  # noqa: B018


def test_cli_rejects_a_bad_pipeline_before_running_anything(tmp_path: Path) -> None:
    home = tmp_path / "home"
    marker = tmp_path / "ran.txt"
    path = write(
        tmp_path,
        f"""
        steps:
          first: {{command: [{PY}, -c, "open('{marker}', 'w')"]}}
          second: {{command: [{PY}, -c, pass], needs: [ghost]}}
    """,
    )
    proc = cli(home, "pipeline", "run", str(path), check=False)
    assert proc.returncode == 1
    assert "needs unknown step 'ghost'" in proc.stderr
    assert not marker.exists() and not (home / "flightlog.db").exists()
