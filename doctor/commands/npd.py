"""``gnd npd RESULT``: a Kubernetes node-problem-detector custom plugin over the last saved result.

NPD runs a custom plugin every ``invoke_interval`` and kills it after ``timeout`` (5 s by default),
so this does not run the checks: it reads the result the collector DaemonSet last wrote
(``gnd check --format json -o ...``), refuses one older than ``--max-age``, and answers with NPD's
contract: exit 0 (OK), 1 (problem: a finding at or above ``--fail-on``) or 2 (unknown), and one line
on stdout, the message NPD puts on the node condition. A finding about a GPU names it by its UUID
(from the result's inventory); ``--gpu UUID`` judges the findings about that GPU only.
"""

from __future__ import annotations

import argparse
import time

from doctor.commands.common import add_fail_on

HELP = "node-problem-detector custom plugin: judge the last saved result (exit 0 ok, 1 problem, 2 unknown)"
DESCRIPTION = """\
Read a result saved by `gnd check --format json -o RESULT` (the collector DaemonSet writes one per
node) and answer as a node-problem-detector custom plugin: one line on stdout and
exit status 0 nothing at or above --fail-on; 1 a finding at or above it (the message names the top
one, a GPU by its UUID); 2 unknown: no result, unreadable, older than --max-age or dated in the
future, or a run its --deadline cut that found nothing."""
EPILOG = """\
examples:
  gnd npd /var/lib/gpu-node-doctor/result.json
  gnd npd /var/lib/gpu-node-doctor/result.json --max-age 7200 --fail-on critical
  gnd npd /var/lib/gpu-node-doctor/result.json --gpu GPU-e51a1391-08fb-e45b-6956-d837f8aef667"""

OK, PROBLEM, UNKNOWN = 0, 1, 2
#: NPD keeps this much of a plugin's output by default (max_output_length: 80); the config here allows
#: more, the message is cut at this length either way
MAX_MESSAGE = 256
#: a result dated this far ahead of the clock is not trusted either (skewed clock, forged file)
FUTURE_SLACK_S = 300.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("result", metavar="RESULT", help="a saved `gnd check --format json` result")
    p.add_argument("--max-age", type=float, default=7200.0, metavar="SECONDS",
                   help="an older result is unknown (default 7200: two collector intervals of an hour)")
    add_fail_on(p, help="a problem is a finding at or above LEVEL (critical, high, medium, low, info; default high)")
    p.add_argument("--gpu", metavar="UUID", help="judge only the findings about this GPU (GPU-xxxxxxxx-...)")


def _age_s(generated_at: str) -> float | None:
    from datetime import datetime

    try:
        stamp = datetime.fromisoformat(generated_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        return None
    return time.time() - stamp.timestamp()


def _span(seconds: float) -> str:
    return f"{seconds:.0f} s" if abs(seconds) < 120 else f"{seconds / 60:.0f} min"


def _say(message: str) -> None:
    from doctor.textsafe import clean

    print(" ".join(clean(message).split())[:MAX_MESSAGE])


def run(args: argparse.Namespace) -> int:
    from doctor.errors import DoctorError
    from doctor.findings import at_least
    from doctor.result_io import load_result

    try:
        result = load_result(args.result)
    except DoctorError as exc:
        _say(f"gnd: unknown, {exc}")
        return UNKNOWN
    age = _age_s(result.generated_at)
    if age is None:
        _say(f"gnd: unknown, {args.result} has no valid generated_at time")
        return UNKNOWN
    if age > args.max_age:
        _say(f"gnd: unknown, the result is {_span(age)} old (--max-age {_span(args.max_age)}): "
             "is the collector running?")
        return UNKNOWN
    if age < -FUTURE_SLACK_S:
        _say(f"gnd: unknown, the result is dated {_span(-age)} in the future (clock skew?)")
        return UNKNOWN
    gpus = {str(g.get("address")): str(g.get("uuid")) for g in result.inventory.get("gpus") or []
            if isinstance(g, dict) and g.get("uuid") and g.get("address")}
    findings = result.findings
    if args.gpu:
        addresses = {a for a, u in gpus.items() if u == args.gpu}
        if not addresses:
            _say(f"gnd: unknown, no GPU {args.gpu} in the result")
            return UNKNOWN
        findings = [f for f in findings if f.subject_id in addresses]
    top = [f for f in findings if at_least(f.severity, args.fail_on)]  # saved in rank order
    if top:
        f = top[0]
        subject = gpus.get(f.subject_id) or f.subject
        more = f" (+{len(top) - 1} more)" if len(top) > 1 else ""
        _say(f"gnd: {f.severity} {f.check} {subject}: {f.title}{more}")
        return PROBLEM
    if any(f.check == "doctor.deadline" for f in result.findings):
        _say(f"gnd: unknown, the run was cut by its --deadline and found nothing at or above {args.fail_on}")
        return UNKNOWN
    scope = f"GPU {args.gpu}" if args.gpu else result.source.get("hostname") or "node"
    _say(f"gnd: {scope}: nothing at or above {args.fail_on} (result {_span(max(age, 0))} old)")
    return OK
