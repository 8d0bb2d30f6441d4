"""The deployment examples (deploy/, docs/deploy.md) parse and agree with the code: the
variables they set exist, the commands and options they run exist, the health check they
probe is a real route, and the scaled setups really run several servers over one store."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from flightlog.cli.main import cli
from flightlog.config import VARIABLES
from flightlog.server.routes import OPERATIONS

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "deploy" / "docker-compose.yml"
KUBERNETES = ROOT / "deploy" / "kubernetes" / "flightlog.yaml"
KNOWN = {v.name for v in VARIABLES} | {
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "HOME",
}
_ROUTES = {op.full_path.replace("//", "/") for op in OPERATIONS}


def _flightlog_commands(shell: str) -> list[list[str]]:
    """Every `flightlog …` / `python -m flightlog …` command line inside a shell string."""
    words = shlex.split(shell)
    if words[:2] == ["sh", "-c"]:
        shell = words[2]
    out = []
    for part in re.split(r"&&|;|\|\|", shell):
        words = shlex.split(part.replace("exec ", ""))
        if words[:3] == ["python", "-m", "flightlog"]:
            out.append(words[3:])
        elif words[:1] == ["flightlog"]:
            out.append(words[1:])
    return out


def _check_command(args: list[str]) -> None:
    """The command exists and takes these options (click parses them, nothing runs)."""
    ctx = click.Context(cli)
    command: Any = cli
    while isinstance(command, click.Group) and args and not args[0].startswith("-"):
        command = command.get_command(ctx, args.pop(0))
        assert command is not None, f"no such command in {args}"
    command.make_context("flightlog", list(args), resilient_parsing=False)


def test_compose_runs_two_servers_over_one_postgres_and_one_bucket() -> None:
    doc = yaml.safe_load(COMPOSE.read_text())
    services = doc["services"]
    servers = [s for name, s in services.items() if name.startswith("flightlog-")]
    assert len(servers) == 2
    for server in servers:
        env = server["environment"]
        assert set(env) <= KNOWN
        assert env["FLIGHTLOG_STORE"].startswith("postgresql://") and "@postgres:5432/" in env["FLIGHTLOG_STORE"]
        assert env["FLIGHTLOG_ARTIFACTS"].startswith("s3://") and env["AWS_ENDPOINT_URL"] == "http://minio:9000"
        commands = _flightlog_commands(server["command"])
        assert commands and commands[0][0] == "server" and "--auth" in commands[0]
        for command in commands:
            _check_command(command)
        assert "/healthz" in " ".join(server["healthcheck"]["test"]) and "/healthz" in _ROUTES
    for command in _flightlog_commands(services["token"]["command"]):
        _check_command(command)
    nginx = (COMPOSE.parent / "nginx.conf").read_text()
    assert "server flightlog-1:8765;" in nginx and "server flightlog-2:8765;" in nginx
    assert "proxy_buffering off;" in nginx  # live streams


def test_kubernetes_example_is_two_replicas_with_probes_and_secrets() -> None:
    docs = {d["kind"]: d for d in yaml.safe_load_all(KUBERNETES.read_text())}
    assert set(docs) == {"ConfigMap", "Deployment", "Service"}
    deployment = docs["Deployment"]
    assert deployment["spec"]["replicas"] >= 2
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert set(env) <= KNOWN
    assert env["FLIGHTLOG_STORE"]["valueFrom"]["secretKeyRef"]["key"] == "store"  # a password: never in a ConfigMap
    assert "secretKeyRef" in env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] in _ROUTES
    (commands,) = [_flightlog_commands(arg) for arg in container["args"]]
    assert commands[-1][0] == "server"
    for command in commands:
        _check_command(command)
    from flightlog.alerts.config import parse_config

    assert [r.name for r in parse_config(docs["ConfigMap"]["data"]["alerts.yaml"], "alerts.yaml").rules] == ["loss-nan"]
    assert docs["Service"]["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize("path", [COMPOSE, KUBERNETES])
def test_the_deploy_page_shows_each_example(path: Path) -> None:
    page = (ROOT / "docs" / "deploy.md").read_text()
    assert str(path.relative_to(ROOT)) in page
