"""Pipelines: a DAG of steps, each attempt a child run under ``flightlog run``.

    pipe = flightlog.Pipeline("churn")
    pipe.add("prepare", "python prepare.py", outputs=["data/clean.csv"])
    pipe.add("validate", gate=[{"expect": "expect.yaml", "data": "data/clean.csv"}], needs=["prepare"])
    pipe.add("train", "python train.py", needs=["validate"], inputs=["data/clean.csv"], retries=2)
    result = pipe.run(max_parallel=2)

or ``flightlog pipeline run pipeline.yaml``. See docs/pipelines.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flightlog.lazy import lazy_attributes

if TYPE_CHECKING:
    from flightlog.pipeline.controller import PipelineResult, run_pipeline
    from flightlog.pipeline.define import Pipeline, StepFunction, step
    from flightlog.pipeline.resume import resume_pipeline
    from flightlog.pipeline.spec import GateCheck, PipelineSpec, StepSpec, validate
    from flightlog.pipeline.state import StepState, load_view
    from flightlog.pipeline.yamlfile import load_pipeline_file, parse_pipeline

__all__ = [
    "GateCheck",
    "Pipeline",
    "PipelineResult",
    "PipelineSpec",
    "StepFunction",
    "StepSpec",
    "StepState",
    "load_pipeline_file",
    "load_view",
    "parse_pipeline",
    "resume_pipeline",
    "run_pipeline",
    "step",
    "validate",
]

# where each name lives: imported on first use, so `flightlog --help` (which registers the
# pipeline commands) does not load the controller
_HOMES = {
    "PipelineResult": ".controller",
    "resume_pipeline": ".resume",
    "run_pipeline": ".controller",
    "Pipeline": ".define",
    "StepFunction": ".define",
    "step": ".define",
    "GateCheck": ".spec",
    "PipelineSpec": ".spec",
    "StepSpec": ".spec",
    "validate": ".spec",
    "StepState": ".state",
    "load_view": ".state",
    "load_pipeline_file": ".yamlfile",
    "parse_pipeline": ".yamlfile",
}


__getattr__, __dir__ = lazy_attributes(__name__, _HOMES, eager=tuple(__all__))
