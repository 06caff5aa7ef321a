#!/usr/bin/env bash
# Runs the Go tests of the given packages (go list patterns) for
# `make test-go`, in two go test runs side by side:
#
# - with the race detector ($RACE, default -race): every package whose tests
#   run the controllers, the emulators or the tools in the test process;
# - without it, one package at a time: the packages whose tests drive the
#   operator *binary* (built without -race, as users run it) in a sandbox
#   (plain_re below). There the race detector would instrument only the
#   test harness and the in-process azuresim and capzsim, whose own
#   packages run with it, for about 45 % more CPU (test/chaos: 235 CPU-s
#   with -race, 161 without, on a 2-core machine).
#
# The suite is CPU-bound on two cores, so the two runs share them: the race
# run starts two packages at a time (go test's default), the other one.
# Each line of output is written whole; a package's lines stay together as
# go test prints them. The script fails when either run fails.
#
# Environment: GO (go), GO_TEST_FLAGS (flags for both runs), RACE (the race
# run's extra flags; empty runs everything without the race detector).
set -uo pipefail

GO=${GO:-go}
read -r -a flags <<<"${GO_TEST_FLAGS:--count=1 -timeout=45m}"
read -r -a race <<<"${RACE--race}"
# Keep in step with CONTRIBUTING.md ("Race detector").
plain_re='/(test/(scale|chaos|simulate|e2e)|cmd/demo|charts)$'

if [[ $# -eq 0 ]]; then
	set -- ./...
fi
if ! list=$("$GO" list "$@"); then
	exit 1
fi
race_pkgs=()
plain_pkgs=()
while read -r p; do
	[[ -z $p ]] && continue
	if [[ $p =~ $plain_re ]]; then
		plain_pkgs+=("$p")
	else
		race_pkgs+=("$p")
	fi
done <<<"$list"

rcs=$(mktemp -d)
trap 'rm -rf "$rcs"' EXIT
run() { # name, go test arguments...
	local name=$1
	shift
	{
		"$GO" test "$@" 2>&1
		echo $? >"$rcs/$name"
	} | sed -u ''
}

if ((${#race_pkgs[@]})); then
	run race "${race[@]}" "${flags[@]}" "${race_pkgs[@]}" &
fi
if ((${#plain_pkgs[@]})); then
	run plain -p 1 "${flags[@]}" "${plain_pkgs[@]}" &
fi
wait

rc=0
for f in "$rcs"/*; do
	[[ -e $f ]] || continue
	if [[ $(cat "$f") != 0 ]]; then
		echo "test-go: the $(basename "$f") run failed" >&2
		rc=1
	fi
done
exit $rc
