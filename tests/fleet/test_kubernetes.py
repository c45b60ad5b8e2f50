"""deploy/kubernetes manifests: valid against the Kubernetes schemas, and wired as the docs say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")
kv = pytest.importorskip("kubernetes_validate")

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
K8S_VERSION = "1.30.0"


def _docs() -> list[tuple[str, dict[str, Any]]]:
    return [(p.name, d) for p in sorted(DEPLOY.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]


def test_every_manifest_validates_strictly() -> None:
    docs = _docs()
    assert {d["kind"] for _, d in docs} >= {"DaemonSet", "CronJob", "PersistentVolumeClaim"}
    for _name, doc in docs:
        kv.validate(doc, K8S_VERSION, strict=True)  # raises on an unknown or mistyped field


def test_validator_rejects_a_typo() -> None:
    name, ds = next((n, d) for n, d in _docs() if d["kind"] == "DaemonSet")
    ds["spec"]["template"]["spec"]["hostPid"] = True
    with pytest.raises(kv.ValidationError):
        kv.validate(ds, K8S_VERSION, strict=True)


def test_daemonset_mounts_host_read_only_and_is_unprivileged() -> None:
    ds = next(d for _, d in _docs() if d["kind"] == "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for path in ("/host/sys", "/host/proc", "/host/etc"):
        assert mounts[path].get("readOnly") is True
    sec = container["securityContext"]
    assert sec["privileged"] is False and sec["allowPrivilegeEscalation"] is False
    assert sec["capabilities"]["drop"] == ["ALL"] and "SYS_ADMIN" not in sec["capabilities"]["add"]
    assert "gnd collect --root /host" in container["args"][0]


def test_cronjob_runs_fleet_over_the_shared_volume() -> None:
    cj = next(d for _, d in _docs() if d["kind"] == "CronJob")
    pod = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert "gnd fleet /snapshots/latest" in pod["containers"][0]["args"][0]
    ds = next(d for _, d in _docs() if d["kind"] == "DaemonSet")
    claim = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v}
    ds_claim = {v["persistentVolumeClaim"]["claimName"]
                for v in ds["spec"]["template"]["spec"]["volumes"] if "persistentVolumeClaim" in v}
    assert claim == ds_claim == {"gnd-snapshots"}
