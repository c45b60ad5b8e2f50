#!/usr/bin/env bash
# gpu-node-doctor as a Slurm HealthCheckProgram: drain this node when gnd finds a problem at or above
# a chosen severity, with the top finding as the drain reason; resume it once gnd finds none (only if
# gnd drained it). Install (slurm.conf):
#   HealthCheckProgram=/usr/local/sbin/gnd-healthcheck.sh
#   HealthCheckInterval=3600
#   HealthCheckNodeState=IDLE        # run only on idle nodes: gnd itself is light, but be polite
# Settings (environment, or /etc/default/gnd-healthcheck):
#   GND_SEVERITY   drain at or above: critical, high (default), medium, low
#   GND            the gnd command (default: gnd)
#   GND_ARGS       extra arguments for `gnd check` (e.g. "--only pcie numa" or "--baseline /etc/gnd/expected.toml")
#   GND_TIMEOUT    seconds before gnd is given up on (default 120; a timeout never drains)
#   GND_NODE       node name (default: hostname -s)
#   GND_DRY_RUN=1  print the scontrol command instead of running it
# Exit status: 0 healthy or drained as intended; 1 gnd found problems (node drained); 2 gnd could not run.
set -u

[ -r /etc/default/gnd-healthcheck ] && . /etc/default/gnd-healthcheck

SEVERITY="${GND_SEVERITY:-high}"
GND="${GND:-gnd}"
TIMEOUT="${GND_TIMEOUT:-120}"
NODE="${GND_NODE:-$(hostname -s)}"
PYTHON="${GND_PYTHON:-python3}"

case "$SEVERITY" in
  critical|high|medium|low) ;;
  *) echo "gnd-healthcheck: GND_SEVERITY must be critical, high, medium or low, not '$SEVERITY'" >&2; exit 2 ;;
esac

run_scontrol() {
  if [ "${GND_DRY_RUN:-0}" = 1 ]; then
    printf 'scontrol'; printf ' %q' "$@"; printf '\n'
  else
    scontrol "$@"
  fi
}

tmp="$(mktemp "${TMPDIR:-/tmp}/gnd-healthcheck.XXXXXX")" || exit 2
trap 'rm -f "$tmp"' EXIT

# shellcheck disable=SC2086  # GND_ARGS is a word list on purpose
timeout "$TIMEOUT" $GND check --format json --fail-on "$SEVERITY" ${GND_ARGS:-} >"$tmp" 2>/dev/null
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
  echo "gnd-healthcheck: gnd could not run (exit $rc); node left as it is" >&2
  exit 2
fi

# The top finding at or above SEVERITY, as one line: "CHECK SUBJECT: TITLE" (empty when none).
reason="$("$PYTHON" - "$tmp" "$SEVERITY" <<'PY'
import json, sys
order = ["critical", "high", "medium", "low"]
try:
    data = json.load(open(sys.argv[1], encoding="utf-8"))
except (OSError, ValueError):
    sys.exit(3)
limit = order.index(sys.argv[2])
top = [f for f in data.get("findings") or [] if f.get("severity") in order[:limit + 1]]
if top:
    f = min(top, key=lambda f: (order.index(f["severity"]), f.get("rank", 0)))
    text = f"{f['severity']} {f.get('check', '')} {f.get('subject', '')}: {f.get('title', '')}"
    more = len(top) - 1
    if more:
        text += f" (+{more} more)"
    print(" ".join(text.split())[:200])
PY
)"
prc=$?
if [ "$prc" -ne 0 ]; then
  echo "gnd-healthcheck: could not read gnd's output; node left as it is" >&2
  exit 2
fi

if [ -n "$reason" ]; then
  run_scontrol update NodeName="$NODE" State=DRAIN Reason="gnd: $reason"
  echo "gnd-healthcheck: drained $NODE: $reason" >&2
  exit 1
fi

# Healthy: resume the node only if gnd drained it (its reason starts with "gnd:").
if [ "${GND_DRY_RUN:-0}" != 1 ] && scontrol show node "$NODE" 2>/dev/null | grep -q 'Reason=gnd:'; then
  run_scontrol update NodeName="$NODE" State=RESUME
  echo "gnd-healthcheck: resumed $NODE (gnd finds nothing at or above $SEVERITY now)" >&2
fi
exit 0
