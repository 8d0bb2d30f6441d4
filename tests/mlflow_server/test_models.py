"""MLflow 3's logged models and model registry against a real `flightlog server` (auth on), with
the real MLflow client in a subprocess: a scikit-learn model logged as a logged model, registered,
aliased, and loaded back with ``mlflow.pyfunc.load_model("models:/name@alias")``; the flightlog
side (``flightlog models show``) sees the same version, digest and alias, and an alias set by
``flightlog models alias`` is the one MLflow reads. Bad input gets MLflow's error codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

import flightlog
from flightlog.server.testing import RunningServer
from tests.helpers import cli_json
from tests.mlflow_server.test_artifacts import mlflow_script, server

__all__ = ["server"]  # the fixture, shared with test_artifacts.py
# each script starts the real MLflow client (and scikit-learn): seconds alone, more on two busy cores
pytestmark = pytest.mark.timeout(600)

_LOG_REGISTER_LOAD = """
import json, os, sys
import numpy as np
import mlflow
from mlflow import MlflowClient
from sklearn.linear_model import LogisticRegression

run_id, work = sys.argv[1], sys.argv[2]
X = np.array([[0.0], [1.0], [2.0], [3.0]])
y = np.array([0, 0, 1, 1])
model = LogisticRegression().fit(X, y)
local = os.path.join(work, "saved")
mlflow.sklearn.save_model(model, local)

client = MlflowClient()
logged = client.create_logged_model(experiment_id="0", name="model", source_run_id=run_id, params={"C": "1.0"})
client.log_model_artifacts(logged.model_id, local)
client.finalize_logged_model(logged.model_id, "READY")
found = client.search_logged_models(experiment_ids=["0"], filter_string="name = 'model'")

mv = mlflow.register_model(f"models:/{logged.model_id}", "fraud")
client.set_registered_model_alias("fraud", "production", mv.version)
loaded = mlflow.pyfunc.load_model("models:/fraud@production")
by_alias = client.get_model_version_by_alias("fraud", "production")
rm = client.get_registered_model("fraud")
print(json.dumps({
    "model_id": logged.model_id,
    "status": str(client.get_logged_model(logged.model_id).status),
    "found": [m.model_id for m in found],
    "version": mv.version,
    "source": mv.source,
    "prediction": [int(p) for p in loaded.predict(np.array([[0.0], [3.0]]))],
    "alias_version": by_alias.version,
    "aliases": rm.aliases,
    "download_uri": client.get_model_version_download_uri("fraud", mv.version),
    "logged_tags": client.get_logged_model(logged.model_id).tags,
}))
"""

_READ_BACK = """
import json, sys
from mlflow import MlflowClient
client = MlflowClient()
v = client.get_model_version_by_alias("fraud", "champion")
versions = client.search_model_versions("name = 'fraud'")
models = client.search_registered_models(filter_string="name LIKE 'fr%'")
client.rename_registered_model("fraud", "fraud-v2")
renamed = client.get_registered_model("fraud-v2")
client.delete_registered_model_alias("fraud-v2", "champion")
print(json.dumps({
    "champion": v.version,
    "versions": sorted(int(x.version) for x in versions),
    "models": [m.name for m in models],
    "renamed_aliases": renamed.aliases,
    "latest": [x.version for x in renamed.latest_versions],
}))
"""


def test_log_register_alias_and_load(mlflow_python: Path, server: RunningServer, tmp_path: Path) -> None:
    run = flightlog.init(project="default", name="train")
    run.finish()
    work = tmp_path / "work"
    work.mkdir()
    out = mlflow_script(mlflow_python, server, tmp_path, _LOG_REGISTER_LOAD, run.id, str(work))
    assert out["status"] == "READY" and out["found"] == [out["model_id"]]
    assert (out["version"], out["source"]) == ("1", f"models:/{out['model_id']}")
    assert out["prediction"] == [0, 1]
    assert out["alias_version"] == "1" and out["aliases"] == {"production": "1"}
    assert out["download_uri"] == f"mlflow-artifacts:/0/models/{out['model_id']}/artifacts"
    assert '"name": "fraud"' in out["logged_tags"]["mlflow.modelVersions"]

    # flightlog's side: the version is its run's model directory, one digest over every file
    home = tmp_path / "client"
    shown = cli_json(home, "models", "show", "fraud")
    assert shown["project"] == "default" and shown["aliases"] == {"production": 1}
    (version,) = shown["versions"]
    assert (version["run_id"], version["artifact_path"]) == (run.id, f"models/{out['model_id']}")
    with flightlog.Client() as client:
        arts = {a.path: a for a in client.artifacts(run.id)}
    manifest = arts[version["artifact_path"]]
    assert manifest.kind == "model" and version["digest"] == manifest.sha256
    assert f"models/{out['model_id']}/MLmodel" in arts, sorted(arts)

    # an alias set on flightlog's side is the one MLflow reads; rename and alias removal go back
    cli_json(home, "models", "alias", "fraud@champion", "1")
    back = mlflow_script(mlflow_python, server, tmp_path, _READ_BACK, str(work))
    assert back["champion"] == "1" and back["versions"] == [1] and back["models"] == ["fraud"]
    assert back["renamed_aliases"] == {"champion": "1", "production": "1"} and back["latest"] == ["1"]
    assert cli_json(home, "models", "show", "fraud-v2")["aliases"] == {"production": 1}


def _mlflow_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, (response.request.url, response.text)
    body: dict[str, Any] = response.json()
    assert body["error_code"] == code and body["message"], body
    return body


def test_bad_registry_requests_get_mlflow_errors(server: RunningServer, tmp_path: Path) -> None:
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    run = flightlog.init(project="default")
    run.log_artifact(weights, name="model/w.bin")
    run.finish()
    api = server.url + "/api/2.0/mlflow"
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {server.token('writer')}"}) as http:
        assert http.post(f"{api}/registered-models/create", json={"name": "churn"}).status_code == 200
        _mlflow_error(
            http.post(f"{api}/registered-models/create", json={"name": "churn"}), 400, "RESOURCE_ALREADY_EXISTS"
        )
        _mlflow_error(http.get(f"{api}/registered-models/get", params={"name": "nope"}), 404, "RESOURCE_DOES_NOT_EXIST")
        _mlflow_error(http.post(f"{api}/registered-models/create", json={}), 400, "INVALID_PARAMETER_VALUE")
        made = http.post(
            f"{api}/model-versions/create", json={"name": "churn", "source": f"runs:/{run.id}/model", "run_id": run.id}
        )
        assert made.status_code == 200 and made.json()["model_version"]["version"] == "1", made.text
        _mlflow_error(
            http.post(f"{api}/model-versions/create", json={"name": "nope", "source": f"runs:/{run.id}/model"}),
            404,
            "RESOURCE_DOES_NOT_EXIST",
        )
        _mlflow_error(
            http.post(f"{api}/model-versions/create", json={"name": "churn", "source": f"runs:/{run.id}/absent"}),
            404,
            "RESOURCE_DOES_NOT_EXIST",
        )
        _mlflow_error(
            http.post(f"{api}/model-versions/create", json={"name": "churn", "source": "s3://bucket/x"}),
            400,
            "INVALID_PARAMETER_VALUE",
        )
        _mlflow_error(
            http.get(f"{api}/model-versions/get", params={"name": "churn", "version": "7"}),
            404,
            "RESOURCE_DOES_NOT_EXIST",
        )
        _mlflow_error(
            http.post(f"{api}/registered-models/alias", json={"name": "churn", "alias": "prod", "version": "9"}),
            404,
            "RESOURCE_DOES_NOT_EXIST",
        )
        _mlflow_error(
            http.get(f"{api}/registered-models/alias", params={"name": "churn", "alias": "prod"}),
            404,
            "RESOURCE_DOES_NOT_EXIST",
        )
        _mlflow_error(
            http.get(f"{api}/model-versions/search", params={"filter": "name = 'churn' OR run_id = 'x'"}),
            400,
            "INVALID_PARAMETER_VALUE",
        )
        _mlflow_error(http.get(f"{api}/logged-models/m-{'0' * 32}"), 404, "RESOURCE_DOES_NOT_EXIST")
        _mlflow_error(
            http.post(f"{api}/logged-models", json={"experiment_id": "12345"}), 404, "RESOURCE_DOES_NOT_EXIST"
        )
        elsewhere = flightlog.init(project="elsewhere")
        elsewhere.log_artifact(weights, name="model/w.bin")
        elsewhere.finish()
        refused = _mlflow_error(
            http.post(f"{api}/model-versions/create", json={"name": "churn", "source": f"runs:/{elsewhere.id}/model"}),
            400,
            "INVALID_PARAMETER_VALUE",
        )
        assert "project 'default'" in refused["message"]
        # the version made from a single file points at it, digest and all
        mv = http.get(f"{api}/model-versions/get", params={"name": "churn", "version": "1"}).json()["model_version"]
        assert mv["source"] == f"runs:/{run.id}/model" and mv["run_id"] == run.id
        uri = http.get(f"{api}/model-versions/get-download-uri", params={"name": "churn", "version": "1"}).json()
        assert uri == {"artifact_uri": f"mlflow-artifacts:/0/{run.id}/artifacts/model"}


_FLUENT = """
import json, sys
import numpy as np
import mlflow
from sklearn.linear_model import LinearRegression

mlflow.set_experiment("churn-models")
with mlflow.start_run() as run:
    mlflow.log_param("fit_intercept", True)
    model = LinearRegression().fit(np.array([[0.0], [1.0], [2.0]]), np.array([1.0, 3.0, 5.0]))
    info = mlflow.sklearn.log_model(model, name="model")
mv = mlflow.register_model(f"runs:/{run.info.run_id}/model", "churn")
mlflow.MlflowClient().set_registered_model_alias("churn", "champion", mv.version)
loaded = mlflow.pyfunc.load_model("models:/churn@champion")
print(json.dumps({
    "run_id": run.info.run_id,
    "model_id": info.model_id,
    "source": mv.source,
    "prediction": [round(float(p), 6) for p in loaded.predict(np.array([[3.0]]))],
}))
"""


def test_fluent_log_model_in_a_run(mlflow_python: Path, server: RunningServer, tmp_path: Path) -> None:
    """The way most code does it: ``log_model`` inside ``start_run``, ``register_model("runs:/…")``."""
    out = mlflow_script(mlflow_python, server, tmp_path, _FLUENT)
    assert out["prediction"] == [7.0] and out["source"] == f"models:/{out['model_id']}"
    shown = cli_json(tmp_path / "client", "models", "show", "churn")
    assert shown["project"] == "churn-models" and shown["aliases"] == {"champion": 1}
    assert shown["versions"][0]["run_id"] == out["run_id"]
    assert shown["versions"][0]["artifact_path"] == f"models/{out['model_id']}"


def test_a_token_of_another_project_sees_nothing(server: RunningServer, tmp_path: Path) -> None:
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights")
    run = flightlog.init(project="default")
    run.log_artifact(weights, name="model/w.bin")
    run.finish()
    api, proxy = server.url + "/api/2.0/mlflow", server.url + "/api/2.0/mlflow-artifacts"
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {server.token('writer')}"}) as http:
        assert http.post(f"{api}/registered-models/create", json={"name": "fraud"}).status_code == 200
        made = http.post(f"{api}/model-versions/create", json={"name": "fraud", "source": f"runs:/{run.id}/model"})
        assert made.status_code == 200, made.text
    other = {"Authorization": f"Bearer {server.token('writer', project='other')}"}
    with httpx.Client(timeout=30, headers=other) as http:
        _mlflow_error(
            http.get(f"{api}/registered-models/get", params={"name": "fraud"}), 404, "RESOURCE_DOES_NOT_EXIST"
        )
        _mlflow_error(
            http.get(f"{api}/registered-models/alias", params={"name": "fraud", "alias": "x"}),
            404,
            "RESOURCE_DOES_NOT_EXIST",
        )
        assert http.get(f"{api}/registered-models/search").json() == {"registered_models": []}
        _mlflow_error(http.get(f"{proxy}/artifacts/0/{run.id}/artifacts/model/w.bin"), 404, "RESOURCE_DOES_NOT_EXIST")
        _mlflow_error(
            http.put(f"{proxy}/artifacts/0/{run.id}/artifacts/planted.bin", content=b"x"),
            404,
            "RESOURCE_DOES_NOT_EXIST",
        )
        _mlflow_error(
            http.post(f"{api}/model-versions/create", json={"name": "fraud", "source": f"runs:/{run.id}/model"}),
            404,
            "RESOURCE_DOES_NOT_EXIST",
        )


def test_a_model_logged_outside_any_run_gets_a_run_of_its_own(server: RunningServer) -> None:
    api, proxy = server.url + "/api/2.0/mlflow", server.url + "/api/2.0/mlflow-artifacts"
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {server.token('writer')}"}) as http:
        made = http.post(f"{api}/logged-models", json={"experiment_id": "0", "name": "scorer", "tags": []})
        assert made.status_code == 200, made.text
        info = made.json()["model"]["info"]
        assert info["status"] == "LOGGED_MODEL_PENDING" and "source_run_id" not in info
        where = info["artifact_uri"].removeprefix("mlflow-artifacts:/")
        assert http.put(f"{proxy}/artifacts/{where}/MLmodel", content=b"flavors: {}\n").status_code == 200
        done = http.patch(f"{api}/logged-models/{info['model_id']}", json={"status": "LOGGED_MODEL_READY"})
        assert done.json()["model"]["info"]["status"] == "LOGGED_MODEL_READY"
        listed = http.get(f"{api}/logged-models/{info['model_id']}/artifacts/directories").json()
        assert listed["files"] == [{"path": "MLmodel", "is_dir": False, "file_size": 12}]
    with flightlog.Client() as client:
        (run,) = [r for r in client.runs(project="default") if r.tags.get("mlflow.loggedModelId") == info["model_id"]]
        arts = {a.path: a for a in client.artifacts(run.id)}
    assert run.name == "logged model scorer" and run.status == "succeeded"
    assert set(arts) == {f"models/{info['model_id']}/MLmodel", f"models/{info['model_id']}"}
    assert arts[f"models/{info['model_id']}"].kind == "model"  # the manifest written at READY
