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
# With --real it generates instead the CRDs the real Azure Service Operator
# of the real-controller test world serves (hack/asomanager): every kind
# CAPZ makes through ASO for an AzureCluster, with all the API versions ASO
# v2.20.0 has for it and its storage versions, the newest storage version
# stored (ASO's hub), converted by ASO's webhook (the test world sets
# spec.conversion).
#
# Usage:
#   hack/asocrds/generate.sh          generate if needed, then print the directory
#   hack/asocrds/generate.sh --real   the same for the real ASO's CRDs
#
# Environment:
#   ASO_CRDS_DIR  where to put the CRDs (default: under
#                 ${XDG_CACHE_HOME:-$HOME/.cache}/azure-private-endpoint-operator)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
aso=github.com/Azure/azure-service-operator/v2/api
kind=aso-crds
packages=("$aso/network/v1api20220701")
files=(network.azure.com_privateendpoints.yaml network.azure.com_privatelinkservices.yaml)
if [[ "${1:-}" == --real ]]; then
	kind=aso-crds-real
	packages=()
	for v in v1api20201101 v1api20220701 v1api20240301 v20250301; do
		packages+=("$aso/network/$v" "$aso/network/$v/storage")
	done
	packages+=("$aso/resources/v1api20200601" "$aso/resources/v1api20200601/storage")
	files=(resources.azure.com_resourcegroups.yaml network.azure.com_virtualnetworks.yaml
		network.azure.com_virtualnetworkssubnets.yaml network.azure.com_natgateways.yaml
		network.azure.com_bastionhosts.yaml network.azure.com_privateendpoints.yaml
		network.azure.com_privatelinkservices.yaml)
fi
stamp=$({ cat "$here/go.mod" "$here/go.sum"; echo "${packages[*]}"; go env GOVERSION; } | sha256sum | cut -c1-16)
cache_home=${XDG_CACHE_HOME:-$HOME/.cache}
dest=${ASO_CRDS_DIR:-$cache_home/azure-private-endpoint-operator}/$kind/$stamp

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
paths=()
for p in "${packages[@]}"; do
	paths+=("paths=$p")
done
(cd "$here" && GOWORK=off GOFLAGS= go tool controller-gen \
	crd:allowDangerousTypes=true,maxDescLen=0 "${paths[@]}" \
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
