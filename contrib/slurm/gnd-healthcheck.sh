#!/usr/bin/env bash
# gpu-node-doctor as a Slurm HealthCheckProgram: drain this node when gnd finds a problem at or above
# a chosen severity, with the top finding as the drain reason; resume it once gnd finds none (only if
# gnd drained it). Install (slurm.conf):
#   HealthCheckProgram=/usr/local/sbin/gnd-healthcheck.sh
#   HealthCheckInterval=3600
#   HealthCheckNodeState=IDLE        # run only on idle nodes: gnd itself is light, but be polite
# slurmd runs it with an empty environment (only SLURMD_NODENAME) and kills it after 60 s, so settings
# come from /etc/default/gnd-healthcheck (or the environment when run by hand):
#   GND_SEVERITY   drain at or above: critical, high (default), medium, low
#   GND            the gnd command (default: gnd; a full path when it lives in a virtual environment)
#   GND_SOURCE     what gnd checks (default: this host; a snapshot or sosreport path for a dry run)
#   GND_ARGS       extra arguments for `gnd check` (e.g. "--only pcie numa" or "--baseline /etc/gnd/expected.toml")
#   GND_DEADLINE   seconds gnd has for its whole run (default 45, inside slurmd's 60 s); what did not
#                  finish by then is unknown, and an incomplete run never resumes a node
#   GND_NODE       node name (default: SLURMD_NODENAME, else hostname -s)
#   GND_DRY_RUN=1  print the scontrol commands instead of running them
#   GND_HEALTHCHECK_CONF  the settings file (default /etc/default/gnd-healthcheck)
# Exit status: 0 healthy (or resumed); 1 gnd found problems (node drained); 2 gnd could not run, its
# output was unreadable or a setting is invalid (node left as it is).
set -u
export PATH="${PATH:+$PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

CONF="${GND_HEALTHCHECK_CONF:-/etc/default/gnd-healthcheck}"
# shellcheck disable=SC1090
[ -r "$CONF" ] && . "$CONF"

SEVERITY="${GND_SEVERITY:-high}"
GND="${GND:-gnd}"
DEADLINE="${GND_DEADLINE:-45}"
NODE="${GND_NODE:-${SLURMD_NODENAME:-$(hostname -s)}}"
PYTHON="${GND_PYTHON:-python3}"

case "$SEVERITY" in
  critical|high|medium|low) ;;
  *) echo "gnd-healthcheck: GND_SEVERITY must be critical, high, medium or low, not '$SEVERITY'" >&2; exit 2 ;;
esac
case "$DEADLINE" in
  ''|*[!0-9]*) echo "gnd-healthcheck: GND_DEADLINE must be whole seconds, not '$DEADLINE'" >&2; exit 2 ;;
esac
if [ "$DEADLINE" -lt 1 ] || [ "$DEADLINE" -gt 50 ]; then
  echo "gnd-healthcheck: GND_DEADLINE must be 1 to 50 s (slurmd kills a health check at 60 s)" >&2; exit 2
fi

run_scontrol() {
  if [ "${GND_DRY_RUN:-0}" = 1 ]; then
    printf 'scontrol'; printf ' %q' "$@"; printf '\n'
  else
    scontrol "$@"
  fi
}

tmp="$(mktemp "${TMPDIR:-/tmp}/gnd-healthcheck.XXXXXX")" || exit 2
trap 'rm -f "$tmp"' EXIT

# gnd ends itself at the deadline; `timeout` is only the backstop (it kills, and a kill never drains).
# shellcheck disable=SC2086  # GND and GND_ARGS are word lists on purpose
timeout -s KILL "$((DEADLINE + 8))" $GND check ${GND_SOURCE:+"$GND_SOURCE"} --format json --fail-on "$SEVERITY" \
  --deadline "$DEADLINE" ${GND_ARGS:-} >"$tmp" 2>/dev/null
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
  echo "gnd-healthcheck: gnd could not run (exit $rc); node left as it is" >&2
  exit 2
fi

# Line 1: "complete" or "incomplete" (the deadline cut something); line 2: the top finding at or above
# SEVERITY as "SEVERITY CHECK SUBJECT: TITLE (+N more)", empty when none.
verdict="$("$PYTHON" - "$tmp" "$SEVERITY" <<'PY'
import json, sys
order = ["critical", "high", "medium", "low"]
try:
    with open(sys.argv[1], encoding="utf-8") as fh:
        data = json.load(fh)
    findings = [f for f in data["findings"] if isinstance(f, dict)]
except (OSError, ValueError, KeyError, TypeError):
    sys.exit(3)
cut = any(f.get("check") == "doctor.deadline" or
          any(isinstance(e, dict) and e.get("source") == "--deadline" for e in f.get("evidence") or [])
          for f in findings)
print("incomplete" if cut else "complete")
limit = order.index(sys.argv[2])
top = [f for f in findings if f.get("severity") in order[:limit + 1]]
if top:
    f = min(top, key=lambda f: (order.index(f["severity"]), f.get("rank", 0)))
    text = f"{f['severity']} {f.get('check', '')} {f.get('subject', '')}: {f.get('title', '')}"
    if len(top) > 1:
        text += f" (+{len(top) - 1} more)"
    print("".join(c if c.isprintable() else " " for c in " ".join(text.split()))[:200])
PY
)"
prc=$?
if [ "$prc" -ne 0 ]; then
  echo "gnd-healthcheck: could not read gnd's output; node left as it is" >&2
  exit 2
fi
complete="${verdict%%$'\n'*}"
reason=""
[ "$verdict" != "$complete" ] && reason="${verdict#*$'\n'}"

state="$(scontrol show node "$NODE" 2>/dev/null)"
ours=0
case "$state" in *"Reason=gnd:"*) ours=1 ;; esac
drained=0
case "$state" in *"State="*DRAIN*) drained=1 ;; esac

if [ -n "$reason" ]; then
  if [ "$drained" = 1 ] && [ "$ours" = 0 ]; then  # an administrator's drain reason is theirs to keep
    echo "gnd-healthcheck: $NODE already drained for another reason; gnd found: $reason" >&2
    exit 1
  fi
  run_scontrol update NodeName="$NODE" State=DRAIN Reason="gnd: $reason"
  echo "gnd-healthcheck: drained $NODE: $reason" >&2
  exit 1
fi

# Nothing at or above SEVERITY: resume the node only if gnd drained it, and only on a complete run.
if [ "$ours" = 1 ]; then
  if [ "$complete" != complete ]; then
    echo "gnd-healthcheck: the run did not finish within ${DEADLINE} s; $NODE stays drained" >&2
    exit 0
  fi
  run_scontrol update NodeName="$NODE" State=RESUME
  echo "gnd-healthcheck: resumed $NODE (gnd finds nothing at or above $SEVERITY now)" >&2
fi
exit 0
