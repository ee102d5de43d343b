#!/usr/bin/env bash
# Build (once) and cache the pinned Calico Go components outside the work tree:
#   $SVCTRACE_CACHE/calico-v3.31.0/bin/calico-node   node agent; `calico-node -felix` runs Felix
#   $SVCTRACE_CACHE/calico-v3.31.0/bin/calico        CNI plugin
#   $SVCTRACE_CACHE/calico-v3.31.0/bin/calico-ipam   the same binary (it dispatches on its name)
#   $SVCTRACE_CACHE/calico-v3.31.0/crds/             crd.projectcalico.org/v1 CRDs (Kubernetes datastore)
# Opt-in: nothing else in the testbed calls this. Cold, calico-node took 53 min
# on 2 cores shared with the e2e suite (see README.md). Build times are appended to
# $SVCTRACE_CACHE/build-times.txt. FORCE=1 rebuilds.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

mkdir -p "$CALICO_CACHE"
exec 9>"$SVCTRACE_CACHE/.build-calico.lock"
flock 9

# No cgo: upstream links calico-node against libbpf for the eBPF dataplane;
# without cgo Felix's libbpf package compiles to its stub and only the
# iptables/nftables dataplanes are usable, which is all the testbed needs.
export CGO_ENABLED=0
LDFLAGS="-s -w -X github.com/projectcalico/calico/pkg/buildinfo.Version=$CALICO_VERSION \
-X github.com/projectcalico/calico/pkg/buildinfo.GitRevision=$CALICO_COMMIT \
-X github.com/projectcalico/calico/pkg/buildinfo.BuildDate=$(date -u +%FT%TZ)"
cd "$CALICO_DIR/agent"
# The wrapper's go.sum is committed; -mod=mod lets a first run on a new Go fill it.
export GOFLAGS="${GOFLAGS:-} -mod=mod"

source "$CALICO_DIR/../timed.sh"

# One package at a time and niced: the machine may be running the testbed too.
build() { # NAME PKG LABEL (LABEL: the line in build-times.txt)
	local name=$1 pkg=$2 label=$3
	if [[ -x $CALICO_BIN/$name && -z ${FORCE:-} ]]; then log "$name cached"; return 0; fi
	log "building $name ($pkg, Calico $CALICO_VERSION)"
	mkdir -p "$CALICO_BIN"
	timed "$label" nice -n 19 go build -p 1 -trimpath -ldflags "$LDFLAGS" -o "$CALICO_BIN/.$name.tmp" "$pkg"
	mv "$CALICO_BIN/.$name.tmp" "$CALICO_BIN/$name"
}

build calico-node github.com/projectcalico/calico/node/cmd/calico-node calico-node
build calico github.com/projectcalico/calico/cni-plugin/cmd/calico calico-cni
# Upstream ships calico-ipam as a link to calico; the binary picks the IPAM
# plugin by its own name (cni-plugin/cmd/calico/calico.go).
ln -f "$CALICO_BIN/calico" "$CALICO_BIN/calico-ipam"

if [[ ! -d $CALICO_CRDS || -n ${FORCE:-} ]]; then
	src=$(go list -m -f '{{.Dir}}' github.com/projectcalico/calico)
	rm -rf "$CALICO_CACHE/.crds.tmp" && mkdir -p "$CALICO_CACHE/.crds.tmp"
	# libcalico-go/config/crd holds the crd.projectcalico.org/v1 CRDs that the
	# Kubernetes datastore stores projectcalico.org/v3 resources in, plus the
	# policy.networking.k8s.io (Admin)NetworkPolicy CRDs Calico also watches.
	cp "$src"/libcalico-go/config/crd/*.yaml "$CALICO_CACHE/.crds.tmp/"
	chmod -R u+w "$CALICO_CACHE/.crds.tmp"
	rm -rf "$CALICO_CRDS" && mv "$CALICO_CACHE/.crds.tmp" "$CALICO_CRDS"
fi
"$CALICO_BIN/calico-node" -v >&2 || true
log "Calico binaries ready under $CALICO_CACHE"
