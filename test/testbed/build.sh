#!/usr/bin/env bash
# Build (once) and cache the pinned testbed binaries outside the work tree:
#   $SVCTRACE_CACHE/k8s-v1.37.2/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kube-proxy,kubelet,kubectl}
#   $SVCTRACE_CACHE/etcd-v3.7.0/bin/etcd
#   $SVCTRACE_CACHE/coredns-v1.15.0/bin/coredns
# Reused when present. Build times are appended to $SVCTRACE_CACHE/build-times.txt.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

mkdir -p "$SVCTRACE_CACHE"
exec 9>"$SVCTRACE_CACHE/.build.lock"
flock 9   # one build at a time (parallel `make` or another checkout)

export CGO_ENABLED=0 GOFLAGS=-mod=mod
pkg=k8s.io/component-base/version
cgv=k8s.io/client-go/pkg/version
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
vflags=""
for p in $pkg $cgv; do
	vflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
	vflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
LDFLAGS="-s -w$vflags"

timed() { # timed LABEL cmd...
	local label=$1 t0 t1; shift
	t0=$(date +%s)
	"$@"
	t1=$(date +%s)
	log "built $label in $((t1 - t0))s"
	printf '%s\t%s\t%ss\n' "$(date -u +%FT%TZ)" "$label" "$((t1 - t0))" >>"$SVCTRACE_CACHE/build-times.txt"
}

build_k8s_group() { # label bin...
	local label=$1; shift
	local missing=() b
	for b in "$@"; do [[ -x $K8S_BIN/$b ]] || missing+=("$b"); done
	((${#missing[@]})) || return 0
	local tmp; tmp=$(mktemp -d "$SVCTRACE_CACHE/.tmp.XXXX")
	local pkgs=(); for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
	log "building ${missing[*]} (Kubernetes $K8S_VERSION) ..."
	timed "$label(${missing[*]})" bash -c 'cd "$1" && shift && go build -trimpath -ldflags "$LDFLAGS" -o "$@"' _ \
		"$TESTBED_DIR/k8s" "$tmp/" "${pkgs[@]}"
	mkdir -p "$K8S_BIN"
	for b in "${missing[@]}"; do mv "$tmp/$b" "$K8S_BIN/$b"; done
	rmdir "$tmp"
}

export LDFLAGS
build_k8s_group control-plane kube-apiserver kube-controller-manager kube-scheduler kube-proxy
build_k8s_group kubelet kubelet
build_k8s_group kubectl kubectl

if [[ ! -x $ETCD_BIN/etcd ]]; then
	tmp=$(mktemp -d "$SVCTRACE_CACHE/.tmp.XXXX")
	log "building etcd $ETCD_VERSION ..."
	timed etcd bash -c 'cd "$1" && go build -trimpath -ldflags "-s -w" -o "$2/etcd" go.etcd.io/etcd/server/v3' _ "$TESTBED_DIR/k8s" "$tmp"
	mkdir -p "$ETCD_BIN"; mv "$tmp/etcd" "$ETCD_BIN/etcd"; rmdir "$tmp"
fi

if [[ ! -x $COREDNS_BIN/coredns ]]; then
	tmp=$(mktemp -d "$SVCTRACE_CACHE/.tmp.XXXX")
	log "building coredns $COREDNS_VERSION ..."
	# `go install pkg@version` runs outside any module; -mod must not be set.
	timed coredns env -u GOFLAGS GOFLAGS= GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
	mkdir -p "$COREDNS_BIN"; mv "$tmp/coredns" "$COREDNS_BIN/coredns"; rmdir "$tmp"
fi

"$K8S_BIN/kubectl" version --client 2>/dev/null | head -n1 >&2 || true
log "binaries ready under $SVCTRACE_CACHE"
