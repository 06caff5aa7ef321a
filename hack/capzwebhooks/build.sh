#!/usr/bin/env bash
# Builds the webhook server of CAPZ (Cluster API Provider Azure) at one of
# the releases the test world runs, from CAPZ's own module (main.go), for
# internal/testenv, which serves it to the test API server.
#
# The binary is cached outside the clone, keyed by the module files of that
# release, main.go and the Go version: a second run on the same machine
# does no work. The first run of each release downloads CAPZ's dependencies
# through the module proxy and compiles for about a minute on 2 cores.
#
# Usage:
#   hack/capzwebhooks/build.sh VERSION   build if needed, then print the path
#                                        of the binary (VERSION: v1.23.0 or
#                                        v1.27.0)
#
# Environment:
#   CAPZ_WEBHOOKS_DIR  where to put the binaries (default: under
#                      ${XDG_CACHE_HOME:-$HOME/.cache}/azure-private-endpoint-operator)
set -euo pipefail

version=${1:?usage: $0 VERSION (v1.23.0 or v1.27.0)}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case "$version" in
v1.27.0) modfile=go.mod ;;
v1.23.0) modfile=go.v1.23.0.mod ;;
*)
	echo "[capz-webhooks] no module file pins CAPZ $version (known: v1.23.0, v1.27.0)" >&2
	exit 2
	;;
esac
sumfile=${modfile%.mod}.sum
stamp=$({ cat "$here/$modfile" "$here/$sumfile" "$here/main.go"; go env GOVERSION; } | sha256sum | cut -c1-16)
cache_home=${XDG_CACHE_HOME:-$HOME/.cache}
dir=${CAPZ_WEBHOOKS_DIR:-$cache_home/azure-private-endpoint-operator/capz-webhooks}
dest=$dir/$version-$stamp/capzwebhooks

if [[ -x "$dest" ]]; then
	echo "$dest"
	exit 0
fi

printf '[capz-webhooks] building CAPZ %s webhooks from its module (about a minute the first time; cached afterwards)\n' "$version" >&2
mkdir -p "$(dirname "$dest")"
tmp=$(mktemp "$(dirname "$dest")/.tmp.XXXXXX")
trap 'rm -f "$tmp"' EXIT
(cd "$here" && GOWORK=off GOFLAGS= CGO_ENABLED=0 go build -trimpath -modfile="$modfile" -o "$tmp" .) >&2
chmod +x "$tmp"
# Another process may have finished first: its binary is the same.
mv -f "$tmp" "$dest"
echo "$dest"
