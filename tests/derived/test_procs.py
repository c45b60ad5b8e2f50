"""Server processes, GPU holders and the user's environment (doctor.derived.procs); deployment env parser."""

from __future__ import annotations

import textwrap

from doctor.derived.procs import (
    env_value,
    framework_of,
    gpu_holders,
    gpus_of,
    irqbalance_running,
    server_gpus,
    server_roots,
    servers,
    user_env,
)
from doctor.facts.deploy import DeployFile
from doctor.parsers import deploy_env as parser
from tests.checks._netnuma_base import cmdline, environ
from tests.helpers import facts, healthy, sick

ROOT_PID, WORKER = 4242, 4318


def test_vllm_root_and_its_workers() -> None:
    f = facts(base=sick())
    found = servers(f)
    assert [(s.process.pid, s.framework, s.root) for s in found[:2]] == [(ROOT_PID, "vllm", True), (WORKER, "vllm", False)]
    assert [s.process.pid for s in server_roots(f)] == [ROOT_PID]
    assert len(server_gpus(f, ROOT_PID)) == 8  # the workers hold one GPU each
    held, how = gpus_of(f, f.process(WORKER))  # type: ignore[arg-type]
    assert [g.index for g in held] == [0] and how
    assert sorted(gpu_holders(f)) == [4318, 4327, 4336, 4345, 4354, 4363, 4372, 4381]


def test_a_plain_python_process_is_no_server() -> None:
    f = facts(cmdline("python3", "train.py", "--vllm-like"), base=healthy())
    assert framework_of(f.process(ROOT_PID)) is None  # type: ignore[arg-type]
    assert ROOT_PID not in [s.process.pid for s in servers(f)]


def test_user_env_comes_from_roots_and_units_not_from_worker_injections() -> None:
    f = facts(environ(WORKER, NCCL_CUMEM_ENABLE="0"), base=sick())
    disable = env_value(f, "NCCL_IB_DISABLE")
    assert disable is not None and disable.value == "1" and disable.pids == (ROOT_PID,)
    assert disable.files == ("etc/systemd/system/vllm.service",)
    assert env_value(f, "NCCL_CUMEM_ENABLE") is None  # set only in a worker: the framework's, not the user's
    assert [s.name for s in user_env(f, ["NCCL_IB_DISABLE", "NOPE"])] == ["NCCL_IB_DISABLE"]
    assert user_env(f) == user_env(f) and "procs.user_env" in f.derived  # computed once per run


def test_irqbalance() -> None:
    assert irqbalance_running(facts(base=healthy())) in (True, False)
    assert irqbalance_running(facts(base=None)) is None  # no process list recorded: cannot tell


def test_deploy_env_parser_reads_its_docstring_sample() -> None:
    block = textwrap.dedent((parser.__doc__ or "").split("::", 1)[1].split("\n\nComment")[0]).strip("\n")
    sample = "\n".join(line.split("  #")[0].rstrip() for line in block.splitlines())
    got = parser.deploy_env([DeployFile("x.yaml", sample)])
    assert [(n, v) for n, v, _ in got] == [
        ("NCCL_IB_DISABLE", "1"), ("NCCL_DEBUG", "INFO"), ("NCCL_P2P_DISABLE", "1"), ("FOO", "bar"),
        ("NCCL_IB_HCA", "mlx5_0"), ("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_GID_INDEX", "3")]
    assert {p for _, _, p in got} == {"x.yaml"}


def test_deploy_env_parser_skips_comments_and_survives_bad_quoting() -> None:
    text = "# Environment=NCCL_IB_DISABLE=1\n; Environment=A=1\nEnvironment=\"B=2 C='3\n"
    # unbalanced quotes: split on blanks instead of failing (the stray quote stays in the value)
    assert [(n, v) for n, v, _ in parser.deploy_env([DeployFile("u.service", text)])] == [("B", "2"), ("C", "'3")]


def test_processes_are_labelled_by_program_and_pid() -> None:
    """Issue 14: a vendor reading a finding sees which program it is about, not a bare pid."""
    from doctor.derived.procs import process_label, program_of
    from doctor.facts import Process

    def label(*argv: str, name: str | None = None) -> str:
        return program_of(Process(pid=1, ppid=None, name=name, argv=argv))

    assert label("/usr/local/bin/vllm", "serve", "meta-llama/Llama-3.1-8B", "--port", "8000") == "vllm serve"
    assert label("/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m") == "vllm api_server"
    assert label("python3", "-m", "sglang.launch_server", "--model-path", "m") == "sglang.launch_server"
    assert label("python3", "/opt/app/serve.py", "--tp", "8") == "serve.py"
    assert label("/opt/tritonserver/bin/tritonserver", "--model-repository=/m") == "tritonserver"
    assert label("VLLM::Worker_TP2") == "VLLM::Worker_TP2"
    assert label(name="irqbalance") == "irqbalance"
    assert label("/tmp/$(reboot)", name="x;y") == "process"  # nothing usable: no hostile text in a subject
    f = facts(cmdline("/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server"), base=healthy())
    assert process_label(f, 4242) == "vllm api_server (pid 4242)"
    assert process_label(f, 999999) == "process (pid 999999)"


def test_framework_of_skips_the_patterns_only_where_none_can_match() -> None:
    """The word gate gives the answer the patterns give (case, ſ/K folding and titles included)."""
    import random

    from doctor.derived.procs import SERVER_PATTERNS
    from doctor.facts import Process

    def by_patterns(line: str) -> str | None:
        return next((n for n, ps in SERVER_PATTERNS.items() if any(p.search(line) for p in ps)), None)

    pieces = ("vllm", "VLLM::", "Vllm", "sglang", "SGLANG::", "ſglang::", "sglang.launch_server", "serve", " ", "/",
              "-m", "python3", "trtllm-serve", "TRTLLM-serve", "tensorrt_llm", "tritonserver", "ray::", "x", ".", "::")
    rng = random.Random(3)
    for _ in range(4000):
        argv = tuple("".join(rng.choice(pieces) for _ in range(rng.randrange(1, 4))) for _ in range(rng.randrange(0, 3)))
        proc = Process(pid=1, ppid=None, name=rng.choice((None, "ſglang::x", "vllm", "bash")), argv=argv)
        line = " ".join(argv) if argv else (proc.name or "")
        assert framework_of(proc) == by_patterns(line), repr(line)
    assert framework_of(Process(pid=1, ppid=None, name=None, argv=("ſglang::scheduler",))) == "sglang"


def test_deploy_env_gates_give_what_every_pattern_gives() -> None:
    """Each line pattern is skipped only on lines without its literal part: same settings as trying all."""
    import random

    def every_pattern(files: list[DeployFile]) -> list[tuple[str, str, str]]:
        out: list[tuple[str, str, str]] = []
        for df in files:
            lines = df.text.splitlines()
            for i, line in enumerate(lines):
                if line.lstrip().startswith(("#", ";")):
                    continue
                unit = parser._UNIT_ENV.match(line)
                if unit:
                    out.extend((k, v, df.path) for k, v in parser.split_unit_env(unit.group(1)))
                    continue
                out.extend((m.group(1), m.group(2), df.path) for m in parser._DOCKER_E.finditer(line))
                listed = parser._COMPOSE_LIST.match(line)
                if listed:
                    out.append((listed.group(1), listed.group(2).strip(), df.path))
                    continue
                name = parser._K8S_NAME.match(line)
                if name and i + 1 < len(lines):
                    value = parser._K8S_VALUE.match(lines[i + 1])
                    if value:
                        out.append((name.group(1), value.group(1), df.path))
                    continue
                mapped = parser._COMPOSE_MAP.match(line)
                if mapped and mapped.group(2):
                    out.append((mapped.group(1), mapped.group(2).strip(), df.path))
        return out

    pieces = ("Environment=\"A=1\" B=2", " Environment = C=3", "docker run -e X=1 --env=Y=2", "  - NCCL_X=1",
              "-NCCL_Y=2", "- name: N", "  value: \"3\"", "name:M", "value:4", "  FOO: bar", " BAR:", "#x", ";y",
              "-e", "=", ":", " ", "\t", "\n", "ExecStart=/bin/x -e Z=9", "- --env", "Q=1")
    rng = random.Random(12)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) + rng.choice(("\n", "", " ")) for _ in range(rng.randrange(1, 10)))
        files = [DeployFile("etc/x.service", text)]
        assert parser.deploy_env(files) == every_pattern(files), repr(text)
