#!/usr/bin/env bash
# Builds the command of one of the hack/ modules that compile another
# project's code for the test world, and prints the binary's path:
#
#   capzwebhooks  Cluster API Provider Azure's admission webhooks (go.mod
#                 pins CAPZ v1.27.0, go.v1.23.0.mod v1.23.0)
#   capzmanager   CAPZ's AzureCluster and ASOSecret controllers (go.mod
#                 pins CAPZ v1.27.0, go.v1.23.0.mod v1.23.0)
#   asomanager    Azure Service Operator v2.20.0's controllers for the kinds
#                 CAPZ uses
#
# The binary is cached outside the clone, keyed by the module file, its
# go.sum, main.go and the Go version: a second run on the same machine does
# no work. The first run downloads the module's dependencies through the
# module proxy and compiles; on 2 cores with a cold build cache that took
# about a minute for capzwebhooks, 4 for capzmanager and 2 for asomanager
# (after capzmanager, with which it shares the network API packages).
#
# Usage:
#   hack/build-cached.sh NAME [MODFILE]   MODFILE: a module file of NAME's
#                                         directory (default go.mod)
#
# Environment:
#   APEO_HACK_BIN_DIR  where to put the binaries (default: under
#                      ${XDG_CACHE_HOME:-$HOME/.cache}/azure-private-endpoint-operator)
set -euo pipefail

name=${1:?usage: $0 NAME [MODFILE] (NAME: capzwebhooks, capzmanager, asomanager)}
modfile=${2:-go.mod}
case "$name" in
asomanager | capzmanager | capzwebhooks) ;;
*)
	echo "[build-cached] unknown module $name (known: capzwebhooks, capzmanager, asomanager)" >&2
	exit 2
	;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/$name" && pwd)
if [[ "$modfile" == */* || ! -f "$here/$modfile" ]]; then
	echo "[build-cached] $name has no module file $modfile" >&2
	exit 2
fi
sumfile=${modfile%.mod}.sum
stamp=$({ cat "$here/$modfile" "$here/$sumfile" "$here/main.go"; go env GOVERSION; } | sha256sum | cut -c1-16)
cache_home=${XDG_CACHE_HOME:-$HOME/.cache}
dir=${APEO_HACK_BIN_DIR:-$cache_home/azure-private-endpoint-operator/hack-bin}
dest=$dir/$name-${modfile%.mod}-$stamp/$name

if [[ -x "$dest" ]]; then
	echo "$dest"
	exit 0
fi

printf '[build-cached] building %s (%s; minutes the first time, cached afterwards)\n' "$name" "$modfile" >&2
mkdir -p "$(dirname "$dest")"
tmp=$(mktemp "$(dirname "$dest")/.tmp.XXXXXX")
trap 'rm -f "$tmp"' EXIT
(cd "$here" && GOWORK=off GOFLAGS= CGO_ENABLED=0 go build -trimpath -modfile="$modfile" -o "$tmp" .) >&2
chmod +x "$tmp"
# Another process may have finished first: its binary is the same.
mv -f "$tmp" "$dest"
echo "$dest"
