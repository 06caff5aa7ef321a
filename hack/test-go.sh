#!/usr/bin/env bash
# Runs the Go tests of the given packages (go list patterns) for
# `make test-go`, in two go test runs side by side:
#
# - without the race detector, two packages at a time: every package whose
#   tests start API servers (their tests import internal/testenv,
#   internal/testworld or internal/sandbox, or the package is one of them)
#   — the controllers' envtests, the end-to-end runs of the operator binary,
#   the demo, the chart. On a 2-core machine the suite is CPU-bound, and in
#   those packages the race detector doubled the test process's CPU
#   (test/chaos: 235 CPU-s with it, 161 without) and the build of every
#   package a second time; with it the suite no longer fit CI's 90 minutes;
# - with the race detector ($RACE, default -race), one package at a time:
#   the rest, the unit tests of the Azure clients, the DNS engine, the
#   emulator, the caches and the other helpers.
#
# RACE_ALL=1 runs every package with the race detector (make test-race: the
# whole suite as it ran before, over 90 min on a slow 2-core machine; run it
# after a change to a reconciler's concurrency, a cache or a shared client).
# RACE= runs everything without it. Each line of output is written whole; a
# package's lines stay together as go test prints them. The script fails
# when either run fails.
#
# Environment: GO (go), GO_TEST_FLAGS (flags for both runs), RACE, RACE_ALL;
# CGO_ENABLED and GOFLAGS pass through to go (make sets them: Makefile,
# GO_BUILD_ENV), except that the race run has cgo, which the detector needs,
# and no -trimpath.
set -uo pipefail

GO=${GO:-go}
read -r -a flags <<<"${GO_TEST_FLAGS:--count=1 -timeout=45m}"
read -r -a race <<<"${RACE--race}"
module=github.com/giantswarm/azure-private-endpoint-operator
servers_re="^$module/internal/(testenv|testworld|sandbox)\$"

if [[ $# -eq 0 ]]; then
	set -- ./...
fi
if ! list=$("$GO" list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' "$@"); then
	exit 1
fi
race_pkgs=()
plain_pkgs=()
while read -r p imports; do
	[[ -z $p ]] && continue
	servers=false
	for i in $p $imports; do
		if [[ $i =~ $servers_re ]]; then
			servers=true
			break
		fi
	done
	if [[ $servers == true && ${RACE_ALL:-} != 1 ]]; then
		plain_pkgs+=("$p")
	else
		race_pkgs+=("$p")
	fi
done <<<"$list"

rcs=$(mktemp -d)
trap 'rm -rf "$rcs"' EXIT
run() { # name, command...
	local name=$1
	shift
	{
		"$@" 2>&1
		echo $? >"$rcs/$name"
	} | sed -u ''
}

if ((${#plain_pkgs[@]})); then
	run plain "$GO" test "${flags[@]}" "${plain_pkgs[@]}" &
fi
if ((${#race_pkgs[@]})); then
	p=(-p 1)
	if ((${#plain_pkgs[@]} == 0)); then
		p=()
	fi
	# The race detector needs cgo on Linux; make test builds without it
	# (Makefile, GO_BUILD_ENV). The race run builds as go test does by
	# default otherwise too (no -trimpath), so that a build cache that ran
	# the suite before make test's settings changed still serves it: its
	# settings share nothing with the other run's anyway.
	race_env=()
	if ((${#race[@]})); then
		goflags=${GOFLAGS:-}
		race_env=(CGO_ENABLED=1 "GOFLAGS=${goflags//-trimpath/}")
	fi
	race_run() {
		# go test's -p 1 also builds one package at a time: with the build
		# cache cold for these settings (a new machine, changed settings)
		# that compiled the Kubernetes libraries on one core for over half
		# an hour, the other core idle once the other run was done. So the
		# packages are compiled first, at full parallelism; go test reports
		# whatever does not build. (go build refuses a package of tests only.)
		if ((${#race[@]})); then
			local built
			built=$(env "${race_env[@]}" "$GO" list -f '{{if .GoFiles}}{{.ImportPath}}{{end}}' "${race_pkgs[@]}" 2>/dev/null) || true
			if [[ -n $built ]]; then
				# shellcheck disable=SC2086 # import paths, one per line
				env "${race_env[@]}" "$GO" build "${race[@]}" $built >/dev/null 2>&1 || true
			fi
		fi
		env "${race_env[@]}" "$GO" test "${p[@]}" "${race[@]}" "${flags[@]}" "${race_pkgs[@]}"
	}
	run race race_run &
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
