#!/usr/bin/env bash
# gpu-node-doctor as a Slurm Prolog or Epilog: a short look at the GPUs' own fault state before a job
# starts (Prolog) or after it ends (Epilog), draining the node with the finding as the reason.
#   Prolog=/usr/local/sbin/gnd-prolog.sh     # a GPU that needs a reset or fell off the bus: the job
#                                            # is requeued elsewhere (non-zero exit) and the node drained
#   Epilog=/usr/local/sbin/gnd-prolog.sh     # an Xid the job hit: the node is drained after it
# The same settings file as gnd-healthcheck.sh (/etc/default/gnd-healthcheck: GND, GND_SOURCE, GND_NODE),
# plus:
#   GND_PROLOG_SEVERITY  drain at or above (default critical: a prolog must not hold jobs for less)
#   GND_PROLOG_DEADLINE  seconds for gnd (default 20; slurmd waits PrologEpilogTimeout for the prolog)
#   GND_PROLOG_CHECKS    the checks run (default the GPU fault checks, each a read of nvidia-smi/dmesg)
# Installed next to gnd-healthcheck.sh, which does the judging and the draining.
set -u
CONF="${GND_HEALTHCHECK_CONF:-/etc/default/gnd-healthcheck}"
set -a
# shellcheck disable=SC1090
[ -r "$CONF" ] && . "$CONF"
set +a
here="$(cd "$(dirname "$0")" && pwd)"
GND_SEVERITY="${GND_PROLOG_SEVERITY:-critical}" GND_DEADLINE="${GND_PROLOG_DEADLINE:-20}" \
  GND_ARGS="--only ${GND_PROLOG_CHECKS:-gpu.recovery,gpu.unreachable,gpu.xid_errors,gpu.row_remap}" \
  GND_HEALTHCHECK_CONF=/dev/null "$here/gnd-healthcheck.sh"
rc=$?
case "${SLURM_SCRIPT_CONTEXT:-prolog_slurmd}" in
  epilog*) exit 0 ;;   # the job is over; the node is drained (rc 1) or fine; an epilog error would drain it again
  *) [ "$rc" = 1 ] && exit 1; exit 0 ;;  # prolog: 1 requeues the job away from this node; 2 (gnd could not run) lets it run
esac
