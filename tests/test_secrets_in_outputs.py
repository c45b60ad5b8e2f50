"""Secrets planted in a node's processes and units never reach any output: check (JSON, text) or collect."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from doctor import cli
from tests.checks._netnuma_base import ROOT_PID, UNIT, healthy

HF = "hf_" + "PlantedFakeToken" + "0" * 10  # token-shaped, obviously fake
SK = "sk-PlantedApiKey0123456789abcdef"
HF_ARG = "hf_" + "AnotherFakeToken" + "9" * 10
AWS_ID = "AKIA" + "FAKEKEY0" * 2
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTEDKEY"
SECRETS = (HF, SK, HF_ARG, AWS_ID, AWS_SECRET)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("secret-node") / "node"
    shutil.copytree(healthy(), dest, symlinks=True)
    proc = dest / f"proc/{ROOT_PID}"
    env = (proc / "environ").read_bytes()
    (proc / "environ").write_bytes(env + f"HF_TOKEN={HF}\0NCCL_IB_AUTH_TOKEN={HF}\0CUDA_LAUNCH_BLOCKING=1\0".encode())
    argv = (proc / "cmdline").read_bytes()
    (proc / "cmdline").write_bytes(argv + f"--api-key\0{SK}\0--hf-token\0{HF_ARG}\0--enforce-eager\0".encode())
    unit = (dest / UNIT).read_text().replace(
        "[Service]\n", f"[Service]\nEnvironment=AWS_ACCESS_KEY_ID={AWS_ID}\n"
                       f"Environment=AWS_SECRET_ACCESS_KEY={AWS_SECRET}\nEnvironment=HF_TOKEN={HF}\n"
                       "Environment=CUDA_LAUNCH_BLOCKING=1\n")
    (dest / UNIT).write_text(unit)
    return dest


def _assert_clean(blob: str | bytes, where: str) -> None:
    text = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    for secret in SECRETS:
        assert secret not in text, f"{secret[:6]}... leaked in {where}"


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_check_output_has_no_secret(node: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(["check", str(node), "--format", fmt, "--verbose"] if fmt == "text"
             else ["check", str(node), "--format", fmt])
    out, err = capsys.readouterr()
    assert "CUDA_LAUNCH_BLOCKING" in out  # the planted debug flag is reported, from the same files
    _assert_clean(out + err, f"gnd check --format {fmt}")


def test_collect_tarball_has_no_secret(node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.tar.gz"
    cli.main(["collect", "--root", str(node), "-o", str(out)])
    capsys.readouterr()
    with tarfile.open(out) as tf:
        members = [m for m in tf.getmembers() if m.isfile()]
        assert any(m.name.endswith(f"proc/{ROOT_PID}/cmdline") for m in members)
        for member in members:
            data = tf.extractfile(member)
            assert data is not None
            _assert_clean(data.read(), member.name)
