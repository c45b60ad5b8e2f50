"""Secrets by allowlist: a generated corpus (tests/hostile/secret_corpus.py) planted in every input place of the
sick fixture, and every output scanned for each value and its base64 and URL-encoded forms."""

from __future__ import annotations

import io
import json
import re
import shutil
import tarfile
from itertools import cycle
from pathlib import Path

import pytest

from doctor import cli
from tests.helpers import SICK
from tests.hostile.secret_corpus import ENV_NAMES, FLAGS, URLS, corpus, encodings

PID, UNIT = 4242, "etc/systemd/system/vllm.service"
CORPUS = corpus()
#: plain lowercase values (passphrases, words): the shape a sub-command or a bare kernel flag has
PLAIN = [v for k, v in CORPUS.items() if k.startswith(("passphrase", "lower_word"))]
HOSTNAME = next(v for k, v in CORPUS.items() if k.startswith("github_pat"))


def _nul(*words: str) -> bytes:
    return b"".join(w.encode() + b"\0" for w in words)


def _plant(dest: Path) -> None:
    """Every value in one place, round robin over the places (argv, environ, unit, compose, manifest,
    kernel command line, kernel log, URLs of many schemes, docker ``-e`` in a unit, bearer headers in argv
    and a command output, JSON in an environment value, YAML flow maps, an EnvironmentFile, plain words as
    arguments and bare kernel parameters, the host name)."""
    values = iter(CORPUS.values())
    places: dict[str, list[str]] = {k: [] for k in ("argv", "argv_eq", "environ", "unit_env", "unit_exec", "compose_env",
                                                  "compose_cmd", "k8s_env", "k8s_args", "k8s_block", "cmdline",
                                                  "dmesg", "url_at", "url_kinds", "docker_env", "bearer",
                                                  "json_env", "flow_map", "env_file", "positional", "bare_param",
                                                  "as_name")}
    for place, value in zip(cycle(places), values):
        places[place].append(value)
    names, flags = cycle(ENV_NAMES), cycle(FLAGS)
    proc = dest / f"proc/{PID}"
    argv = [w for v in places["argv"] for w in (next(flags), v)]
    argv += [f"{next(flags)}={v}" for v in places["argv_eq"]]
    argv += [w for v in places["url_at"] for w in ("--db", f"postgresql://app:p@ss{v}@db:5432/x")]
    urls = cycle(URLS)
    argv += [w for v in places["url_kinds"] for w in (next(flags), next(urls).format(v=v))]
    argv += [w for v in places["bearer"] for w in ("-H", f"Authorization: Bearer {v}")]
    # plain words after the sub-command (``redis-cli auth WORD``), wherever they stand
    argv += [w for v in places["positional"] + PLAIN for w in ("auth", v)]
    # a secret where a name stands: an option's name, a variable's name, a YAML key
    names_of = [v for v in places["as_name"] if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v)]
    argv += [f"--{v}" for v in places["as_name"]] + [f"{v}=1" for v in names_of]
    proc.joinpath("cmdline").write_bytes(proc.joinpath("cmdline").read_bytes() + _nul(*argv))
    proc.joinpath("environ").write_bytes(proc.joinpath("environ").read_bytes()
                                         + _nul(*(f"{next(names)}={v}" for v in places["environ"]),
                                                *(f'{next(names)}={{"token": "{v}", "n": 1}}' for v in places["json_env"])))
    docker = " ".join(f"-e {next(names)}={v} -e{next(names)}={v} --env={next(names)}={v} --env '{next(names)}={v}'"
                      for v in places["docker_env"])
    unit = (dest / UNIT).read_text().replace("[Service]\n", "[Service]\n" + "".join(
        f"Environment=\"{next(names)}={v}\"\n" for v in places["unit_env"]) + "ExecStartPre=/usr/bin/vllm-warm "
        + " ".join(f"{next(flags)} {v}" for v in places["unit_exec"]) + "\n"
        + f"ExecStartPre=/usr/bin/docker run --rm {docker} vllm/vllm-openai\n"
        + "EnvironmentFile=/etc/default/vllm\n" + "".join(f"Environment={v}=1\n" for v in names_of))
    (dest / UNIT).write_text(unit)
    (dest / "etc/default").mkdir(parents=True, exist_ok=True)
    (dest / "etc/default/vllm").write_text("".join(f"{next(names)}={v}\nexport {next(names)}='{v}'\n"
                                                   for v in places["env_file"]))
    compose = ("services:\n  vllm:\n    image: vllm/vllm-openai\n    environment:\n"
               + "".join(f"      {next(names)}: {v}\n" for v in places["compose_env"][::2])
               + "".join(f"      - {next(names)}={v}\n" for v in places["compose_env"][1::2])
               + "    command: [\"--enforce-eager\", " + ", ".join(f'"{next(flags)}", "{v}"' for v in places["compose_cmd"])
               + "]\n"
               # flow maps: an environment map, a labels map, a nested one, quoted and not
               + "".join(f"    x-flow{i}: {{environment: {{{next(names)}: '{v}'}}, labels: {{note: {v}}}, "
                         f"deploy: {{a: {{b: \"{v}\"}}}}}}\n" for i, v in enumerate(places["flow_map"]))
               + "    x-keys:\n" + "".join(f"      {v}: admin\n" for v in names_of)
               + "".join(f"    x-k{i}: {{{v}: admin}}\n" for i, v in enumerate(names_of)))
    (dest / "etc/compose").mkdir(parents=True, exist_ok=True)
    (dest / "etc/compose/vllm.yaml").write_text(compose)
    manifest = ("apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: vllm\n    env:\n"
                + "".join(f"    - name: {next(names)}\n      value: \"{v}\"\n" for v in places["k8s_env"])
                + "    args:\n" + "".join(f"    - {next(flags)}\n    - {v}\n" for v in places["k8s_args"])
                + "    - --enforce-eager\n    annotations:\n"
                + "".join(f"      note{i}: >-\n        {v}\n" for i, v in enumerate(places["k8s_block"])))
    (dest / "etc/kubernetes/manifests").mkdir(parents=True, exist_ok=True)
    (dest / "etc/kubernetes/manifests/vllm.yaml").write_text(manifest)
    cmdline = (dest / "proc/cmdline").read_text().strip()
    (dest / "proc/cmdline").write_text(cmdline + "".join(f" p{i}.opt={v}" for i, v in enumerate(places["cmdline"]))
                                       + "".join(f" {v}" for v in places["bare_param"] + PLAIN) + "\n")
    dmesg = dest / "sos_commands/kernel/dmesg"
    line = "[    0.000000] Kernel command line: ro " + " ".join(f"k{i}={v}" for i, v in enumerate(places["dmesg"]))
    if dmesg.exists():
        dmesg.write_text(dmesg.read_text() + line + "\n")
    log = dest / "commands/dmesg"
    log.write_text((log.read_text() if log.exists() else "") + line + "\n"
                   + "".join(f"[   9.{i:06d}] agent: GET /v1 Authorization: Bearer {v}\n" for i, v in enumerate(places["bearer"])))
    # a host named like a token (the kernel's name and /etc/hostname)
    for name in ("proc/sys/kernel/hostname", "etc/hostname"):
        (dest / name).write_text(HOSTNAME + "\n")


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SICK.exists():
        pytest.skip("sick fixture not generated")
    dest = tmp_path_factory.mktemp("corpus") / "node"
    shutil.copytree(SICK, dest, symlinks=True)
    _plant(dest)
    return dest


def _leaks(blob: str) -> list[str]:
    return [label for label, value in CORPUS.items() if any(form in blob for form in encodings(value))]


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = cli.main(args)
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), err
    return out + err


def test_corpus_is_large_and_planted(node: Path) -> None:
    assert len(CORPUS) >= 200
    text = "".join(p.read_text(errors="replace") for p in (node / f"proc/{PID}/environ", node / UNIT,
                                                             node / "proc/cmdline", node / "etc/compose/vllm.yaml"))
    assert len(_leaks(text)) > 50  # the scan sees planted values (it would catch a leak)


def test_no_output_holds_a_planted_secret(node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outputs: dict[str, str] = {}
    for fmt in ("json", "text", "prometheus"):
        outputs[f"check {fmt}"] = _run(["check", str(node), "--format", fmt, "--verbose"] if fmt == "text"
                                       else ["check", str(node), "--format", fmt], capsys)
    saved = tmp_path / "r.json"
    _run(["check", str(node), "--format", "json", "-o", str(saved)], capsys)
    for suffix in ("html", "md"):
        report = tmp_path / f"r.{suffix}"
        _run(["report", "--from-json", str(saved), "-o", str(report)], capsys)
        outputs[f"report .{suffix}"] = report.read_text()
    fix = tmp_path / "fix.sh"
    printed = _run(["fix-script", str(node), "-o", str(fix)], capsys)  # never a script in the working folder
    outputs["fix-script"] = printed + "".join(f.read_text() for f in sorted(tmp_path.glob("fix*.sh")))
    baseline = tmp_path / "b.toml"
    _run(["baseline", str(node), "-o", str(baseline)], capsys)
    outputs["baseline"] = baseline.read_text()
    outputs["diff"] = _run(["diff", str(node), str(saved), "--format", "json", "-v"], capsys)
    outputs["fleet"] = _run(["fleet", str(saved), str(node), "-j", "1", "-q", "--format", "json"], capsys)
    snap = tmp_path / "s.tar.gz"
    _run(["collect", "--root", str(node), "-o", str(snap)], capsys)
    with tarfile.open(snap) as tf:
        members = [m for m in tf.getmembers() if m.isfile()]
        outputs["snapshot"] = "".join((tf.extractfile(m) or io.BytesIO()).read().decode("utf-8", "replace")
                                      for m in members)
    outputs["check of the snapshot"] = _run(["check", str(snap), "--format", "json"], capsys)
    outputs.update(_pdf_and_tui_export(node, saved, tmp_path, capsys))
    leaked = {where: _leaks(blob)[:5] for where, blob in outputs.items() if _leaks(blob)}
    assert not leaked, json.dumps(leaked, indent=1)


def _pdf_text(path: Path) -> str:
    """The PDF's page text and its embedded files (the fix script, its rollback, the JSON result)."""
    pypdf = pytest.importorskip("pypdf")
    reader = pypdf.PdfReader(io.BytesIO(path.read_bytes()))
    pages = "".join(page.extract_text() or "" for page in reader.pages)
    embedded = "".join(b.decode("utf-8", "replace") for blobs in reader.attachments.values() for b in blobs)
    assert "PCIe" in pages and '"findings"' in embedded  # the scan reads the pages and the embedded result
    return pages + embedded


def _pdf_and_tui_export(node: Path, saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """The PDF of the node and of its saved result (page text and embedded files), and what the TUI's export
    writes (reports.formats.export of the result the TUI shows) in each format it offers."""
    from doctor.result_io import load_result
    from reports.formats import OFFERED, available, export

    offered = available("tui")
    if not offered.get("pdf"):
        pytest.skip("PDF renderer not available (WeasyPrint or Pango missing)")
    out: dict[str, str] = {}
    for name, args in (("report .pdf", [str(node)]), ("report --from-json .pdf", ["--from-json", str(saved)])):
        pdf = tmp_path / f"{name.replace(' ', '_')}.pdf"
        _run(["report", *args, "-o", str(pdf)], capsys)
        out[name] = _pdf_text(pdf)
    result = load_result(str(saved))
    for fmt in OFFERED["tui"]:
        target = tmp_path / f"tui-export.{fmt}"
        export(result, fmt, str(target))
        out[f"TUI export .{fmt}"] = _pdf_text(target) if fmt == "pdf" else target.read_text()
    return out

