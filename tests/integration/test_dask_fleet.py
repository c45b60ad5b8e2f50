"""`gnd fleet --dask` and sources in object storage, against the real engines: a Dask LocalCluster of two
worker processes and moto's S3 server, both on 127.0.0.1, over a generated fleet with planted outliers.

The reference is always the local `gnd fleet DIR` of the same nodes (run in a subprocess: the test
process holds the cluster's threads, and the local pool forks). Each other run must give the same JSON
and text, but for the run's duration, its job count and where the sources lie.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from doctor.cli import main
from fixtures.tools.make_node import HEALTHY
from tests.fleet.conftest import BEFORE_FIX
from tests.fleet.fleetgen import make_fleet
from tests.integration.dask_support import POISON, poisoned_batch, require

NODES = 30
X8, BUFFERS_NODE, CMDLINE_NODE = 4, 11, 22
PLANTED = {X8: replace(HEALTHY, gpu_links={3: (2.5, 8)}),
           BUFFERS_NODE: replace(HEALTHY, sysctl_overrides=dict(BEFORE_FIX.sysctl_overrides)),
           CMDLINE_NODE: replace(HEALTHY, extra_cmdline=("pcie_aspm=force",))}
BROKEN = "broken.tar.gz"
BUCKET = "fleet"
PREFIX = f"s3://{BUCKET}/snaps/"
ROOT = "ROOT/"
ENGINES = ("distributed", "fsspec", "s3fs", "moto.server", "boto3")
#: modules a `gnd check` or a local `gnd fleet` must never import (the `distributed` extra's)
HEAVY = ("dask", "distributed", "fsspec", "s3fs", "aiobotocore", "botocore", "boto3", "moto")


def _name(i: int) -> str:
    return f"gpu-node-{i:03d}"


def _gnd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, timeout=300,
                          env=env, stdin=subprocess.DEVNULL)


def normalised(text: str, *roots: str) -> Any:
    """The JSON report without what may differ between engines: duration, job count, where sources lie."""
    for root in roots:
        text = text.replace(root.rstrip("/") + "/", ROOT)
    data = json.loads(text)
    data["summary"].pop("duration_s")
    data["summary"].pop("jobs")
    for row in (*data["nodes"], *data["unreadable"]):  # cut at 300 characters: where depends on the path's length
        if row["error"]:
            row["error"] = row["error"][:120]
    return data


def normalised_text(text: str, *roots: str) -> str:
    for root in roots:
        text = text.replace(root.rstrip("/") + "/", ROOT)
    return re.sub(r"\(\d+\.\d s, \d+ job(\(s\)|s)\)", "(TIME)", text)


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("dask-fleet")
    make_fleet(d, NODES, PLANTED)
    (d / BROKEN).write_bytes(b"\x1f\x8b this is not a gzip stream")
    return d


@pytest.fixture(scope="module")
def reference(fleet_dir: Path) -> tuple[Any, str]:
    """(normalised JSON, normalised text) of the local `gnd fleet DIR`."""
    js = _gnd("fleet", str(fleet_dir), "-j", "2", "--format", "json")
    text = _gnd("fleet", str(fleet_dir), "-j", "2")
    assert js.returncode == 1 and text.returncode == 1, js.stderr + text.stderr  # outliers, one unreadable
    data = normalised(js.stdout, str(fleet_dir))
    assert {n["name"] for n in data["outlier_nodes"]} == {_name(X8)}  # the high finding most nodes lack
    assert {n["name"] for n in data["drift_nodes"]} == {_name(i) for i in PLANTED}
    assert [u["path"] for u in data["unreadable"]] == [ROOT + BROKEN]
    return data, normalised_text(text.stdout, str(fleet_dir))


@pytest.fixture(scope="module")
def s3(fleet_dir: Path) -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 holding the fleet under s3://fleet/snaps/ and one object over the cap
    of a saved result under s3://fleet/big/; the environment points fsspec (and the workers) at it."""
    require(*ENGINES)
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    with pytest.MonkeyPatch.context() as mp:
        for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                           "AWS_DEFAULT_REGION": "us-east-1", "FSSPEC_S3_ENDPOINT_URL": endpoint}.items():
            mp.setenv(key, value)
        mp.delenv("AWS_PROFILE", raising=False)
        import fsspec.config

        # fsspec reads FSSPEC_* when first imported (as `gnd` does, after the environment is set); here it
        # was imported before: read again, for this process (the workers start with it set)
        mp.setattr(fsspec.config, "conf", {**fsspec.config.conf})
        fsspec.config.set_conf_env(fsspec.config.conf)
        client = boto3.client("s3", endpoint_url=endpoint)
        client.create_bucket(Bucket=BUCKET)
        for path in sorted(fleet_dir.iterdir()):
            client.upload_file(str(path), BUCKET, f"snaps/{path.name}")
        # a saved result one byte over the 64 MiB a local one may be
        client.put_object(Bucket=BUCKET, Key="big/huge.json", Body=b" " * (64 * 1024 * 1024 + 1))
        try:
            yield endpoint
        finally:
            server.stop()


@pytest.fixture(scope="module")
def cluster(s3: str) -> Iterator[Any]:
    """Two worker processes of one thread, every port on 127.0.0.1 (started after the S3 environment is
    set, so the workers inherit it). The scheduler gives a batch up after it killed two workers."""
    require(*ENGINES)
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                         dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL) as lc, Client(lc) as client:
        client.wait_for_workers(2, timeout=120)
        yield client


def _run_in_process(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(["fleet", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_everything_listens_on_loopback_only(cluster: Any, s3: str) -> None:
    """Every socket this test process and its children (nannies, workers) listen on is on 127.0.0.1:
    the scheduler, its HTTP server, each nanny and worker, and the S3 server."""
    import psutil

    me = psutil.Process()
    listening = [c.laddr for proc in (me, *me.children(recursive=True))
                 for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    assert len(listening) >= 1 + 2 * 2 + 1, listening  # the scheduler, two nannies and workers, S3
    assert {a.ip for a in listening} == {"127.0.0.1"}, listening
    addresses = [cluster.scheduler.address, *cluster.scheduler_info()["workers"]]
    assert all(a.startswith("tcp://127.0.0.1:") for a in addresses), addresses
    assert s3.startswith("http://127.0.0.1:")


def test_dask_local_2_gives_the_local_result(fleet_dir: Path, reference: tuple[Any, str]) -> None:
    """The command a user types: `gnd fleet DIR --dask local:2` starts its own cluster and equals `gnd fleet DIR`."""
    require("distributed")
    js = _gnd("fleet", str(fleet_dir), "--dask", "local:2", "--format", "json")
    assert js.returncode == 1, js.stderr
    assert normalised(js.stdout, str(fleet_dir)) == reference[0]
    assert json.loads(js.stdout)["summary"]["jobs"] == 2
    assert js.stderr == ""  # no progress bar off a terminal, no Dask log lines


def test_a_scheduler_address_gives_the_local_result_json_and_text(
        fleet_dir: Path, reference: tuple[Any, str], cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    address = cluster.scheduler.address
    rc, out, _ = _run_in_process([str(fleet_dir), "--dask", address, "--format", "json"], capsys)
    assert rc == 1 and normalised(out, str(fleet_dir)) == reference[0]
    rc, out, _ = _run_in_process([str(fleet_dir), "--dask", address], capsys)
    assert rc == 1 and normalised_text(out, str(fleet_dir)) == reference[1]


@pytest.fixture(scope="module")
def s3_dask(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    """(exit status, JSON) of `gnd fleet s3://fleet/snaps/ --dask tcp://...`."""
    out = tmp_path_factory.mktemp("s3-dask") / "fleet.json"
    rc = main(["fleet", PREFIX, "--dask", cluster.scheduler.address, "--format", "json", "-o", str(out)])
    return rc, out.read_text()


def test_from_s3_gives_the_local_result_with_dask_and_without(
        reference: tuple[Any, str], s3_dask: tuple[int, str]) -> None:
    rc, out = s3_dask
    assert rc == 1 and normalised(out, PREFIX) == reference[0]
    local_pool = _gnd("fleet", f"{PREFIX}*.tar.gz", "-j", "2", "--format", "json", env=dict(os.environ))
    assert local_pool.returncode == 1, local_pool.stderr
    assert normalised(local_pool.stdout, PREFIX) == reference[0]


def test_a_corrupt_object_is_a_node_failure_named_by_its_url(s3_dask: tuple[int, str]) -> None:
    rc, out = s3_dask
    data = json.loads(out)
    assert rc == 1 and data["summary"]["analysed"] == NODES
    [bad] = data["unreadable"]
    assert bad["path"] == PREFIX + BROKEN
    assert bad["error"].startswith(f"cannot read tarball {PREFIX}{BROKEN}: truncated or corrupt")
    assert "\n" not in bad["error"] and "gnd-fetch" not in bad["error"]  # one line; never the temporary copy


@pytest.mark.parametrize("dask", [True, False], ids=["dask", "local-pool"])
def test_an_object_over_the_size_cap_is_refused(dask: bool, cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"s3://{BUCKET}/big/huge.json"
    args = [f"s3://{BUCKET}/big/", "--format", "json", *(["--dask", cluster.scheduler.address] if dask else ["-j", "1"])]
    rc, out, err = _run_in_process(args, capsys)
    assert rc == 2 and "no source could be analysed" in err
    assert json.loads(out)["unreadable"] == [
        {"path": url, "error": f"{url}: the JSON result is larger than the 64 MiB limit (64 MiB)"}]


def test_cache_with_dask_is_kept_on_the_workers_and_reused(
        fleet_dir: Path, reference: tuple[Any, str], cluster: Any, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    for _ in range(2):
        rc, out, _ = _run_in_process([str(fleet_dir), "--dask", cluster.scheduler.address, "--cache", str(cache),
                                      "--format", "json"], capsys)
        assert rc == 1 and normalised(out, str(fleet_dir)) == reference[0]
        assert len(list(cache.glob("*.json"))) == NODES  # one entry per readable snapshot, none twice


def test_a_worker_killed_mid_run_loses_no_node(fleet_dir: Path, reference: tuple[Any, str], cluster: Any) -> None:
    from doctor.fleet.dask_engine import DaskEngine
    from doctor.fleet.fleet import analyse_fleet, expand_paths

    pids: dict[str, int] = cluster.run(os.getpid)
    killed: list[int] = []

    def kill_a_busy_worker(done: int, total: int, summary: dict[str, Any]) -> None:
        if killed:
            return
        busy = [w for w, keys in cluster.processing().items() if keys]
        assert busy and done < total  # work is in flight on that worker
        killed.append(pids[busy[0]])
        os.kill(killed[0], signal.SIGKILL)

    report = analyse_fleet(expand_paths([str(fleet_dir)]), 2, kill_a_busy_worker, engine=DaskEngine(cluster, batch=2))
    assert killed and killed[0] not in cluster.run(os.getpid).values()  # that worker really went
    data = normalised(json.dumps(report.to_dict()), str(fleet_dir))
    assert data == reference[0]


def test_a_node_that_kills_every_worker_is_reported_not_dropped(
        fleet_dir: Path, reference: tuple[Any, str], cluster: Any) -> None:
    from doctor.fleet.dask_engine import DaskEngine
    from doctor.fleet.fleet import analyse_fleet, expand_paths

    report = analyse_fleet(expand_paths([str(fleet_dir)]), 2,
                           engine=DaskEngine(cluster, batch=4, task=poisoned_batch)).to_dict()
    assert report["summary"]["sources"] == NODES + 1
    assert report["summary"]["analysed"] == NODES - 1  # only the poisoned node is lost, and it is named
    errors = {Path(u["path"]).name: u["error"] for u in report["unreadable"]}
    assert set(errors) == {POISON, BROKEN}
    assert errors[POISON].startswith("a Dask worker failed on it every time it was tried, alone too (KilledWorker")
    assert {n["name"] for n in report["outlier_nodes"]} == {_name(X8)}
    assert {n["name"] for n in report["drift_nodes"]} == {_name(i) for i in PLANTED}


def test_bad_dask_options_are_refused_in_one_line(fleet_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args, words in ((["--dask", "udp://x:1"], "give local:N or a scheduler address"),
                        (["--dask", "local:0"], "local:N takes 1 to"),
                        (["--dask", "local:2", "-j", "2"], "--jobs does not apply with --dask")):
        rc, out, err = _run_in_process([str(fleet_dir), *args], capsys)
        assert rc == 2 and out == "" and words in err and len(err.strip().splitlines()) == 1, err


def test_unsupported_url_scheme_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run_in_process(["ftp://host/snaps/"], capsys)
    assert rc == 2 and out == "" and "unsupported scheme ftp://" in err and len(err.strip().splitlines()) == 1


def test_check_and_a_local_fleet_never_import_dask_or_fsspec(fleet_dir: Path) -> None:
    code = ("import sys; from doctor.cli import main; "
            f"rc = main(sys.argv[1:]); bad = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})); "
            "print(','.join(bad)); sys.exit(0)")
    for args in (["check", "--format", "json", "-o", os.devnull],
                 ["fleet", str(fleet_dir), "-j", "1", "-q", "-o", os.devnull]):
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                             check=True)
        assert out.stdout.strip() == "", (args, out.stdout)
