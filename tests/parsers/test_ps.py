"""Tests for doctor.parsers.ps (format of sosreport ``sos_commands/process/ps_auxwwwm``)."""

from __future__ import annotations

import pytest

from doctor.parsers.ps import PsProcess, parse_ps

# Module docstring sample.
DOC_SAMPLE = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.1 167744 11904 ?        -    Nov29   0:03 /sbin/init
root           -  0.0    -      -     - -        Ss   Nov29   0:03 -
vllm        4242 98.5  3.2 9876543 2100000 ?     -    10:01 120:00 python3 -m vllm.entrypoints.openai.api_server --model x
vllm           -  0.1    -      -     - -        Sl   10:01   0:01 -
"""

# Shape of a real `ps auxwwwm` captured by sos 4.0 on Debian (firecracker VM).
REAL_M = """\
USER       PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root         1  1.0  0.0  39016 10272 ?        -    19:52   0:02 /process_api --firecracker-init --addr 0.0.0.0:2024
root         -  1.0    -      -     - -        SLl  19:52   0:02 -
root         -  0.0    -      -     - -        SLl  19:52   0:00 -
root         2  0.0  0.0      0     0 ?        -    19:52   0:00 [kthreadd]
root         -  0.0    -      -     - -        S    19:52   0:00 -
"""

PLAIN_AUXWW = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.0 171880 13428 ?        Ss   Jan10   1:23 /usr/lib/systemd/systemd --switched-root --system --deserialize 17
sglang     81234  301  12.5 120000000 33000000 pts/0 Rl+ Jan11 9000:00 python -m sglang.launch_server --model-path /m --tp 8 --disable-cuda-graph
long-username-x 99 0,5 1,0 1 1 ? S Jan10 0:00 sleep   10
"""


def test_doc_sample() -> None:
    assert parse_ps(DOC_SAMPLE) == (
        PsProcess(user="root", pid=1, command="/sbin/init"),
        PsProcess(user="vllm", pid=4242, command="python3 -m vllm.entrypoints.openai.api_server --model x"),
    )


def test_real_m_threads_skipped() -> None:
    procs = parse_ps(REAL_M)
    assert [p.pid for p in procs] == [1, 2]
    assert procs[0].command == "/process_api --firecracker-init --addr 0.0.0.0:2024"
    assert procs[1].command == "[kthreadd]"


def test_plain_auxww() -> None:
    procs = parse_ps(PLAIN_AUXWW)
    assert [p.pid for p in procs] == [1, 81234, 99]
    assert procs[1].user == "sglang"
    assert procs[1].command.endswith("--tp 8 --disable-cuda-graph")
    assert procs[2].user == "long-username-x" and procs[2].command == "sleep   10"


def test_no_header_assumes_aux_layout() -> None:
    text = "root 1 0.0 0.1 1 1 ? Ss Nov29 0:03 /sbin/init splash\n"
    assert parse_ps(text) == (PsProcess("root", 1, "/sbin/init splash"),)


def test_truncated_line_keeps_partial() -> None:
    text = DOC_SAMPLE + "nobody      777  1.5\n"
    procs = parse_ps(text)
    assert procs[-1] == PsProcess(user="nobody", pid=777, command="")


@pytest.mark.parametrize("text", ["", "\x00\x01\xff", "garbage\n", "USER PID COMMAND\n- - -\n"])
def test_garbage(text: str) -> None:
    assert parse_ps(text) == ()
