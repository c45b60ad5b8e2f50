"""Prometheus text exposition format for node_exporter's textfile collector (``gnd check --format prometheus``).

Write it atomically into the collector's directory, e.g.::

    gnd check --format prometheus -o /var/lib/node_exporter/textfile/gnd.prom.$$ && \\
        mv /var/lib/node_exporter/textfile/gnd.prom.$$ /var/lib/node_exporter/textfile/gnd.prom

Series: ``gnd_finding{check,severity,subject}`` (number of such findings, normally 1; ``pass``
findings are left out), ``gnd_findings{severity}`` (count per severity, every severity present;
``pass``: the checks that passed, the count every output shows),
``gnd_check_status{check,status}`` (1 for each check's status), ``gnd_run_duration_seconds``,
``gnd_run_timestamp_seconds`` and ``gnd_run_info{version,source_kind}``.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime
from typing import Any

from doctor.findings import PASS, SEVERITIES
from doctor.runner import Result
from doctor.textsafe import clean

PREFIX = "gnd"


def escape_label(value: object) -> str:
    """A label value escaped per the exposition format (backslash, double quote, line feed); other
    control characters (terminal escapes, bidi overrides) are neutralised."""
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return clean(text)


def _labels(**labels: object) -> str:
    return "{" + ",".join(f'{k}="{escape_label(v)}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return "NaN"
    return repr(float(value)) if value != int(value) else str(int(value))


def _timestamp(result: Result) -> float | None:
    text = result.generated_at or result.source.get("collected_at")
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _family(lines: list[str], name: str, kind: str, help_text: str) -> None:
    lines.append(f"# HELP {PREFIX}_{name} {help_text}")
    lines.append(f"# TYPE {PREFIX}_{name} {kind}")


def render_prometheus(result: Result, **_options: Any) -> str:
    """The exposition text for one result, ending with a newline."""
    lines: list[str] = []
    findings = result.findings

    _family(lines, "finding", "gauge", "Findings of gpu-node-doctor by check, severity and subject (pass omitted).")
    series = Counter((f.check, str(f.severity), f.subject) for f in findings if f.severity != PASS)
    for (check, severity, subject), n in sorted(series.items()):
        lines.append(f"{PREFIX}_finding{_labels(check=check, severity=severity, subject=subject)} {n}")

    _family(lines, "findings", "gauge", "Number of findings per severity; for pass, the number of checks that passed.")
    counts = result.summary()
    for severity in SEVERITIES:
        lines.append(f"{PREFIX}_findings{_labels(severity=severity)} {counts.get(severity, 0)}")

    _family(lines, "check_status", "gauge", "1 for the status of each check (worst severity, pass or not_applicable).")
    seen: set[tuple[str, str]] = set()
    for chk in result.checks:
        if not isinstance(chk, dict):
            continue
        key = (str(chk.get("id", "")), str(chk.get("status", "")))
        if key not in seen:
            seen.add(key)
            lines.append(f"{PREFIX}_check_status{_labels(check=key[0], status=key[1])} 1")

    _family(lines, "run_duration_seconds", "gauge", "Seconds the checks took.")
    lines.append(f"{PREFIX}_run_duration_seconds {_number(round(result.duration_s, 4))}")

    stamp = _timestamp(result)
    if stamp is not None:
        _family(lines, "run_timestamp_seconds", "gauge", "Unix time the result was generated.")
        lines.append(f"{PREFIX}_run_timestamp_seconds {_number(stamp)}")

    _family(lines, "run_info", "gauge", "Version of gpu-node-doctor and kind of source analysed.")
    lines.append(f"{PREFIX}_run_info{_labels(version=result.tool_version, source_kind=result.source.get('kind', ''))} 1")
    return "\n".join(lines) + "\n"
