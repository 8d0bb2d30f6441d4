"""Pipelines: a DAG of steps, each attempt a child run under ``flightlog run``.

    pipe = flightlog.Pipeline("churn")
    pipe.add("prepare", "python prepare.py", outputs=["data/clean.csv"])
    pipe.add("validate", gate=[{"expect": "expect.yaml", "data": "data/clean.csv"}], needs=["prepare"])
    pipe.add("train", "python train.py", needs=["validate"], inputs=["data/clean.csv"], retries=2)
    result = pipe.run(max_parallel=2)

or ``flightlog pipeline run pipeline.yaml``. See docs/pipelines.md.
"""

from __future__ import annotations

from flightlog.pipeline.controller import PipelineResult, resume_pipeline, run_pipeline
from flightlog.pipeline.define import Pipeline, StepFunction, step
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
