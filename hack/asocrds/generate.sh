#!/usr/bin/env bash
# Generates Azure Service Operator's network.azure.com PrivateEndpoint and
# PrivateLinkService CRDs (API version v1api20220701, the one CAPZ writes)
# from ASO's own Go types with controller-gen, both pinned in this module's
# go.mod, for the test world (internal/testenv installs them). ASO's Go
# module ships no CRD YAML and no other source of them is reachable here.
#
# The result is cached outside the clone, keyed by this module's go.mod and
# go.sum: a second run on the same machine does no work. The first run
# downloads ASO's module (about 50 MB) through the module proxy and takes
# about a minute on 2 cores.
#
# Usage:
#   hack/asocrds/generate.sh   generate if needed, then print the directory
#
# Environment:
#   ASO_CRDS_DIR  where to put the CRDs (default: under
#                 ${XDG_CACHE_HOME:-$HOME/.cache}/azure-private-endpoint-operator)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
stamp=$({ cat "$here/go.mod" "$here/go.sum"; go env GOVERSION; } | sha256sum | cut -c1-16)
cache_home=${XDG_CACHE_HOME:-$HOME/.cache}
dest=${ASO_CRDS_DIR:-$cache_home/azure-private-endpoint-operator/aso-crds/$stamp}
files=(network.azure.com_privateendpoints.yaml network.azure.com_privatelinkservices.yaml)

ready() {
	for f in "${files[@]}"; do
		[[ -s "$dest/$f" ]] || return 1
	done
}
if ready; then
	echo "$dest"
	exit 0
fi

printf '[aso-crds] generating ASO CRDs from its Go types (about a minute the first time; cached afterwards)\n' >&2
mkdir -p "$(dirname "$dest")"
tmp=$(mktemp -d "$(dirname "$dest")/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# ASO's own CRDs are generated with dangerous types allowed (floats) and
# without descriptions; the same options keep the schema ASO serves.
(cd "$here" && GOWORK=off GOFLAGS= go tool controller-gen \
	crd:allowDangerousTypes=true,maxDescLen=0 \
	paths=github.com/Azure/azure-service-operator/v2/api/network/v1api20220701 \
	output:crd:dir="$tmp/all") >&2
mkdir -p "$tmp/out"
for f in "${files[@]}"; do
	cp "$tmp/all/$f" "$tmp/out/$f"
done
# Another process may have finished first: its result is the same.
if ! mv -T "$tmp/out" "$dest" 2>/dev/null && ! ready; then
	echo "[aso-crds] could not place the CRDs in $dest" >&2
	exit 1
fi
echo "$dest"
