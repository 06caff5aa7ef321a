#!/usr/bin/env bash
# Builds the command of one of the hack/ modules that compile another
# project's code for the real-controller test world (hack/asomanager: Azure
# Service Operator; hack/capzmanager: Cluster API Provider Azure), and
# prints the binary's path.
#
# The binary is cached outside the clone, keyed by the module's go.mod,
# go.sum and main.go and the Go version: a second run on the same machine
# does no work. The first run downloads the module's dependencies through
# the module proxy and compiles; on 2 cores with a cold build cache that
# took about 4 minutes for capzmanager and 3 for asomanager.
#
# Usage:
#   hack/build-cached.sh asomanager|capzmanager
#
# Environment:
#   APEO_HACK_BIN_DIR  where to put the binaries (default: under
#                      ${XDG_CACHE_HOME:-$HOME/.cache}/azure-private-endpoint-operator)
set -euo pipefail

name=${1:?usage: $0 asomanager|capzmanager}
case "$name" in
asomanager | capzmanager) ;;
*)
	echo "[build-cached] unknown module $name (known: asomanager, capzmanager)" >&2
	exit 2
	;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/$name" && pwd)
stamp=$({ cat "$here/go.mod" "$here/go.sum" "$here/main.go"; go env GOVERSION; } | sha256sum | cut -c1-16)
cache_home=${XDG_CACHE_HOME:-$HOME/.cache}
dir=${APEO_HACK_BIN_DIR:-$cache_home/azure-private-endpoint-operator/real-controllers}
dest=$dir/$name-$stamp/$name

if [[ -x "$dest" ]]; then
	echo "$dest"
	exit 0
fi

printf '[build-cached] building %s (minutes the first time; cached afterwards)\n' "$name" >&2
mkdir -p "$(dirname "$dest")"
tmp=$(mktemp "$(dirname "$dest")/.tmp.XXXXXX")
trap 'rm -f "$tmp"' EXIT
(cd "$here" && GOWORK=off GOFLAGS= CGO_ENABLED=0 go build -trimpath -o "$tmp" .) >&2
chmod +x "$tmp"
# Another process may have finished first: its binary is the same.
mv -f "$tmp" "$dest"
echo "$dest"
