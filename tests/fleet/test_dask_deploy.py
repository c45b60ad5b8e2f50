"""deploy/kubernetes/dask-fleet.yaml and deploy/slurm/dask-fleet.sbatch: wired as docs/fleet.md says
(the manifests' schema validation is tests/fleet/test_kubernetes.py's, over every file of the folder)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _docs() -> dict[tuple[str, str], dict[str, Any]]:
    docs = yaml.safe_load_all((DEPLOY / "kubernetes" / "dask-fleet.yaml").read_text())
    return {(d["kind"], d["metadata"]["name"]): d for d in docs if d}


def _container(doc: dict[str, Any]) -> dict[str, Any]:
    spec = doc["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    return dict(container)


def test_job_runs_fleet_on_the_scheduler_the_service_names() -> None:
    docs = _docs()
    service = docs[("Service", "gnd-dask-scheduler")]
    port = service["spec"]["ports"][0]["port"]
    job = _container(docs[("Job", "gnd-fleet-dask")])
    assert f"--dask tcp://gnd-dask-scheduler:{port}" in job["args"][0]
    assert "gnd fleet 's3://" in job["args"][0]
    worker = _container(docs[("Deployment", "gnd-dask-worker")])
    assert worker["command"][:3] == ["dask", "worker", f"tcp://gnd-dask-scheduler:{port}"]
    assert worker["command"][worker["command"].index("--nthreads") + 1] == "1"  # one node at a time per process


def test_every_pod_is_unprivileged_and_only_its_own_pods_reach_dask() -> None:
    docs = _docs()
    for key in (("Deployment", "gnd-dask-scheduler"), ("Deployment", "gnd-dask-worker"), ("Job", "gnd-fleet-dask")):
        pod = docs[key]["spec"]["template"]
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
        assert pod["metadata"]["labels"]["app.kubernetes.io/part-of"] == "gnd-dask"
        sec = _container(docs[key])["securityContext"]
        assert sec["allowPrivilegeEscalation"] is False and sec["capabilities"]["drop"] == ["ALL"]
        assert _container(docs[key])["image"].endswith("-distributed")  # built with the extra
    policy = docs[("NetworkPolicy", "gnd-dask")]["spec"]
    assert policy["podSelector"]["matchLabels"] == {"app.kubernetes.io/part-of": "gnd-dask"}
    assert policy["ingress"] == [{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/part-of": "gnd-dask"}}}]}]


def test_the_image_can_be_built_with_the_extra() -> None:
    dockerfile = (DEPLOY / "kubernetes" / "Dockerfile").read_text()
    assert "ARG EXTRAS" in dockerfile and '"/src${EXTRAS:+[$EXTRAS]}"' in dockerfile
    assert "--build-arg EXTRAS=distributed" in (DEPLOY / "kubernetes" / "dask-fleet.yaml").read_text()


def test_sbatch_script_parses_and_runs_gnd_fleet_on_the_job_s_scheduler() -> None:
    script = DEPLOY / "slurm" / "dask-fleet.sbatch"
    bash = shutil.which("bash")
    assert bash is not None
    subprocess.run([bash, "-n", str(script)], check=True)
    text = script.read_text()
    assert "#SBATCH --ntasks-per-node=1" in text
    assert "dask scheduler --scheduler-file" in text and "--nthreads 1" in text
    assert 'gnd fleet "$SOURCES" --dask "$address"' in text
