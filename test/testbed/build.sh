#!/usr/bin/env bash
# Build (once) and cache the pinned testbed binaries outside the work tree:
#   $SVCTRACE_CACHE/k8s-v1.37.2/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kube-proxy,kubelet,kubectl}
#   $SVCTRACE_CACHE/etcd-v3.7.0/bin/etcd
#   $SVCTRACE_CACHE/coredns-v1.15.0/bin/coredns
#   $SVCTRACE_CACHE/kube-router-v2.1.0/bin/kube-router
#   $SVCTRACE_CACHE/flannel-v0.28.10/bin/flanneld
# Reused when present. Build times are appended to $SVCTRACE_CACHE/build-times.txt.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

mkdir -p "$SVCTRACE_CACHE"
exec 9>"$SVCTRACE_CACHE/.build.lock"
flock 9   # one build at a time (parallel `make` or another checkout)

export CGO_ENABLED=0
pkg=k8s.io/component-base/version
cgv=k8s.io/client-go/pkg/version
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
vflags=""
for p in $pkg $cgv; do
	vflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
	vflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
LDFLAGS="-s -w$vflags"

# A cold build takes minutes per binary: say so up front, then print a
# heartbeat (elapsed time, packages compiled so far from `go build -v`) so a
# newcomer sees progress instead of a silent terminal.
timed() { # timed LABEL cmd...
	local label=$1 t0 t1 vlog hb; shift
	t0=$(date +%s)
	vlog=$(mktemp "$SVCTRACE_CACHE/.vlog.XXXX")
	( while sleep 30; do
		log "  ... $label: $(( $(date +%s) - t0 ))s, $(grep -vc "^go: " "$vlog" 2>/dev/null || true) packages compiled"
	done ) &
	hb=$!
	local rc=0
	"$@" 2>"$vlog" || rc=$?
	kill "$hb" 2>/dev/null; wait "$hb" 2>/dev/null || true
	if ((rc)); then grep -v '^[a-zA-Z0-9_./~-]*$' "$vlog" >&2 || true; rm -f "$vlog"; return "$rc"; fi
	rm -f "$vlog"
	t1=$(date +%s)
	log "built $label in $((t1 - t0))s"
	printf '%s\t%s\t%ss\n' "$(date -u +%FT%TZ)" "$label" "$((t1 - t0))" >>"$SVCTRACE_CACHE/build-times.txt"
}

# Cold build times measured on the 2-core machine with empty Go caches; shared
# packages are compiled once, so the first binary of a group takes the longest.
declare -A ESTIMATE=([kube-apiserver]=300 [kube-controller-manager]=60 [kube-scheduler]=20 [kube-proxy]=15
	[kubelet]=25 [kubectl]=20 [etcd]=10 [coredns]=120 [kube-router]=130 [flanneld]=120)
todo=() total=0
for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubectl; do
	[[ -x $K8S_BIN/$b ]] || { todo+=("$b"); total=$((total + ESTIMATE[$b])); }
done
[[ -x $ETCD_BIN/etcd ]] || { todo+=(etcd); total=$((total + ESTIMATE[etcd])); }
[[ -x $COREDNS_BIN/coredns ]] || { todo+=(coredns); total=$((total + ESTIMATE[coredns])); }
[[ -x $KUBE_ROUTER_BIN/kube-router ]] || { todo+=(kube-router); total=$((total + ESTIMATE[kube-router])); }
[[ -x $FLANNEL_BIN/flanneld ]] || { todo+=(flanneld); total=$((total + ESTIMATE[flanneld])); }
if ((${#todo[@]})); then
	log "building ${#todo[@]} pinned binaries from the Go module proxy: ${todo[*]}"
	log "  roughly $((total / 60 + 1)) min on an idle 2-core machine with empty Go caches (more when loaded); cached in $SVCTRACE_CACHE afterwards"
fi
n_done=0

build_k8s() { # bin
	local b=$1
	[[ -x $K8S_BIN/$b ]] && return 0
	n_done=$((n_done + 1))
	local tmp; tmp=$(mktemp -d "$SVCTRACE_CACHE/.tmp.XXXX")
	log "[$n_done/${#todo[@]}] building $b (Kubernetes $K8S_VERSION, ~${ESTIMATE[$b]}s cold) ..."
	timed "$b" bash -c 'cd "$1" && go build -v -trimpath -ldflags "$LDFLAGS" -o "$2" "$3"' _ \
		"$TESTBED_DIR/k8s" "$tmp/$b" "k8s.io/kubernetes/cmd/$b"
	mkdir -p "$K8S_BIN"
	mv "$tmp/$b" "$K8S_BIN/$b"
	rmdir "$tmp"
}

export LDFLAGS
for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubectl; do build_k8s "$b"; done

if [[ ! -x $ETCD_BIN/etcd ]]; then
	tmp=$(mktemp -d "$SVCTRACE_CACHE/.tmp.XXXX")
	n_done=$((n_done + 1))
	log "[$n_done/${#todo[@]}] building etcd $ETCD_VERSION (~${ESTIMATE[etcd]}s cold) ..."
	timed etcd bash -c 'cd "$1" && go build -v -trimpath -ldflags "-s -w" -o "$2/etcd" go.etcd.io/etcd/server/v3' _ "$TESTBED_DIR/k8s" "$tmp"
	mkdir -p "$ETCD_BIN"; mv "$tmp/etcd" "$ETCD_BIN/etcd"; rmdir "$tmp"
fi

if [[ ! -x $COREDNS_BIN/coredns ]]; then
	tmp=$(mktemp -d "$SVCTRACE_CACHE/.tmp.XXXX")
	n_done=$((n_done + 1))
	log "[$n_done/${#todo[@]}] building coredns $COREDNS_VERSION (~${ESTIMATE[coredns]}s cold) ..."
	# `go install pkg@version` runs outside any module; -mod must not be set.
	timed coredns env -u GOFLAGS GOFLAGS= GOBIN="$tmp" go install -v -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
	mkdir -p "$COREDNS_BIN"; mv "$tmp/coredns" "$COREDNS_BIN/coredns"; rmdir "$tmp"
fi

if [[ ! -x $KUBE_ROUTER_BIN/kube-router ]]; then
	tmp=$(mktemp -d "$SVCTRACE_CACHE/.tmp.XXXX")
	n_done=$((n_done + 1))
	log "[$n_done/${#todo[@]}] building kube-router $KUBE_ROUTER_VERSION (~${ESTIMATE[kube-router]}s cold) ..."
	# v2.1.0 is the only version the module proxy serves; its go.mod has no
	# replace directives, so `go install pkg@version` builds it as released.
	timed kube-router env -u GOFLAGS GOFLAGS= GOBIN="$tmp" go install -v -trimpath -ldflags "-s -w" \
		"github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION"
	mkdir -p "$KUBE_ROUTER_BIN"; mv "$tmp/kube-router" "$KUBE_ROUTER_BIN/kube-router"; rmdir "$tmp"
fi

if [[ ! -x $FLANNEL_BIN/flanneld ]]; then
	tmp=$(mktemp -d "$SVCTRACE_CACHE/.tmp.XXXX")
	n_done=$((n_done + 1))
	log "[$n_done/${#todo[@]}] building flanneld $FLANNEL_VERSION (~${ESTIMATE[flanneld]}s cold) ..."
	# Through the wrapper module flannel/ (its go.mod says why `go install
	# pkg@version` cannot build it). cgo as upstream builds it: the udp
	# backend's proxy is C. The version is stamped as upstream's Makefile does.
	timed flanneld bash -c 'cd "$1" && CGO_ENABLED=1 go build -v -trimpath -ldflags "$2" -o "$3/flanneld" github.com/flannel-io/flannel' _ \
		"$TESTBED_DIR/flannel" "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$FLANNEL_VERSION" "$tmp"
	mkdir -p "$FLANNEL_BIN"; mv "$tmp/flanneld" "$FLANNEL_BIN/flanneld"; rmdir "$tmp"
fi

"$K8S_BIN/kubectl" version --client 2>/dev/null | head -n1 >&2 || true
log "binaries ready under $SVCTRACE_CACHE"
