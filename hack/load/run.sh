#!/usr/bin/env bash
# Runs a command while every core is also busy with other work, the way a
# shared CI machine is: LOAD_WORKERS busy loops (default: one per core) at
# normal priority, stopped when the command ends, whatever its result. The
# load stays on this machine (no network, no disk). Used by make
# test-loaded to show that the suite waits on conditions, not on timing.
#
# Usage: hack/load/run.sh COMMAND [ARGS...]
set -euo pipefail

workers=${LOAD_WORKERS:-}
[[ -n "$workers" ]] || workers=$(nproc)
pids=()
stop() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop EXIT INT TERM
for _ in $(seq "$workers"); do
	( while :; do :; done ) &
	pids+=($!)
done
echo "[load] $workers busy loops on $(nproc) cores while running: $*" >&2
"$@"
