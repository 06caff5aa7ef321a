#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver and etcd) from Go modules
# through the module proxy, into the setup-envtest directory layout, so that
# tests find it through KUBEBUILDER_ASSETS. No prebuilt binary is downloaded.
#
# The result is cached outside the clone and keyed by the content of the two
# builder modules under hack/envtest: a second run on the same machine does no
# work, and changing a pinned version rebuilds.
#
# Usage:
#   hack/envtest/build.sh             build if needed, then print the directory
#   hack/envtest/build.sh --print-dir print the directory only (no build)
#   hack/envtest/build.sh --check     exit 0 if up to date, 3 if a build is due
#   hack/envtest/build.sh --kubectl   build kubectl (hack/envtest/kubectl: the
#                                     same k8s.io/kubernetes release; for make
#                                     demo), then print its path
#
# Environment:
#   ENVTEST_K8S_VERSION  Kubernetes version (default: the one pinned in
#                        hack/envtest/kube-apiserver/go.mod)
#   ENVTEST_ASSETS_DIR   where to put the binaries (default: the setup-envtest
#                        layout under ${XDG_DATA_HOME:-$HOME/.local/share})
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pinned=$(grep -Eo 'k8s\.io/kubernetes v[0-9]+\.[0-9]+\.[0-9]+' "$here/kube-apiserver/go.mod" | head -1 | sed 's/.* v//')
version=${ENVTEST_K8S_VERSION:-$pinned}
os=$(go env GOOS)
arch=$(go env GOARCH)
data_home=${XDG_DATA_HOME:-$HOME/.local/share}
dest=${ENVTEST_ASSETS_DIR:-$data_home/kubebuilder-envtest/k8s/$version-$os-$arch}

if [[ "${1:-}" == "--print-dir" ]]; then
	echo "$dest"
	exit 0
fi

log() { printf '[envtest-assets] %s\n' "$*" >&2; }

minor=$(echo "$version" | cut -d. -f2)
version_pkgs=(k8s.io/component-base/version k8s.io/client-go/pkg/version)
ldflags="-s -w"
for p in "${version_pkgs[@]}"; do
	ldflags+=" -X $p.gitVersion=v$version -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done

# The stamp covers everything that decides the binaries' content (not this
# script's text: editing a comment here must not cost a 12-minute rebuild).
stamp_of() {
	{
		cat "$here"/kube-apiserver/go.{mod,sum} "$here"/etcd/go.{mod,sum} "$here"/etcd/main.go
		echo "$ldflags $os $arch"
		go env GOVERSION
	} | sha256sum | cut -d' ' -f1
}
want=$(stamp_of)
stamp_file="$dest/.built-by-azure-private-endpoint-operator"
kubectl_stamp="$dest/.kubectl-built-by-azure-private-endpoint-operator"
if [[ "${1:-}" == "--kubectl" ]]; then
	kubectl_want=$({ cat "$here"/kubectl/go.{mod,sum}; echo "$ldflags $os $arch"; go env GOVERSION; } | sha256sum | cut -d' ' -f1)
	if [[ -x "$dest/kubectl" && -f "$kubectl_stamp" && "$(cat "$kubectl_stamp")" == "$kubectl_want" ]]; then
		echo "$dest/kubectl"
		exit 0
	fi
	mkdir -p "$dest"
	export GOWORK=off CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -trimpath"
	log "building kubectl (cold build takes about 3-6 minutes on 2 cores, less after kube-apiserver; cached afterwards)"
	tmp="$dest/.kubectl.tmp.$$"
	(cd "$here/kubectl" && go build -ldflags "$ldflags" -o "$tmp" k8s.io/kubernetes/cmd/kubectl) || { rm -f "$tmp"; log "FAILED to build kubectl"; exit 1; }
	mv -f "$tmp" "$dest/kubectl"
	echo "$kubectl_want" >"$kubectl_stamp"
	echo "$dest/kubectl"
	exit 0
fi
if [[ -x "$dest/kube-apiserver" && -x "$dest/etcd" && -f "$stamp_file" && "$(cat "$stamp_file")" == "$want" ]]; then
	log "up to date: $dest"
	echo "$dest"
	exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
	log "a build is due in $dest (missing binaries or changed pins): run make envtest-assets"
	exit 3
fi

mkdir -p "$dest"
export GOWORK=off CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -trimpath"

# build NAME MODULE_DIR PACKAGE EXPECTED_COLD_TIME [LDFLAGS]
build() {
	local name=$1 dir=$2 pkg=$3 cold=$4 ldflags=${5:-}
	local tmp="$dest/.$name.tmp.$$"
	log "building $name (cold build takes about $cold on 2 cores; cached afterwards)"
	local start=$SECONDS
	(
		while sleep 30; do log "  still building $name: $((SECONDS - start))s elapsed"; done
	) &
	local ticker=$!
	local rc=0
	(cd "$dir" && go build -ldflags "$ldflags" -o "$tmp" "$pkg") || rc=$?
	kill "$ticker" 2>/dev/null || true
	wait "$ticker" 2>/dev/null || true
	if [[ $rc -ne 0 ]]; then
		rm -f "$tmp"
		log "FAILED to build $name (exit $rc)"
		exit "$rc"
	fi
	mv -f "$tmp" "$dest/$name"
	log "built $name in $((SECONDS - start))s"
}

rm -f "$stamp_file"
build etcd "$here/etcd" . "2-4 minutes" "-s -w"
build kube-apiserver "$here/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver "10-12 minutes" "$ldflags"
"$dest/kube-apiserver" --version >&2
echo "$want" >"$stamp_file"
log "ready: $dest"
echo "$dest"
