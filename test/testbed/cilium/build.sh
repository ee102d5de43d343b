#!/usr/bin/env bash
# Build (once) and cache the pinned Cilium agent and its CLI outside the work tree:
#   $SVCTRACE_CACHE/cilium-v1.20.2/bin/{cilium-agent,cilium-dbg,cilium-agent-uml}  (-uml: agent/uml.patch, see below)
#   $SVCTRACE_CACHE/cilium-v1.20.2/bpf/      the agent's BPF sources (copied per run, it writes into them)
#   $SVCTRACE_CACHE/cilium-v1.20.2/crds/     the CRDs the agent waits for
# Build times are appended to $SVCTRACE_CACHE/build-times.txt.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

mkdir -p "$CILIUM_CACHE"
exec 9>"$SVCTRACE_CACHE/.build-cilium.lock"
flock 9

export CGO_ENABLED=0
LDFLAGS="-s -w -X github.com/cilium/cilium/pkg/version.ciliumVersion=${CILIUM_VERSION#v}"
cd "$CILIUM_DIR/agent"
# The wrapper's go.sum is committed; -mod=mod lets a first run on a new Go fill it.
export GOFLAGS="${GOFLAGS:-} -mod=mod"

source "$CILIUM_DIR/../timed.sh"

build() { # NAME PKG
	local name=$1 pkg=$2
	if [[ -x $CILIUM_BIN/$name && -z ${FORCE:-} ]]; then log "$name cached"; return 0; fi
	log "building $name ($pkg, Cilium $CILIUM_VERSION; ~15 min cold on 2 loaded cores, ~3 GB RSS)"
	mkdir -p "$CILIUM_BIN"
	timed "$name" nice -n 10 go build -trimpath -ldflags "$LDFLAGS" -o "$CILIUM_BIN/.$name.tmp" "$pkg"
	mv "$CILIUM_BIN/.$name.tmp" "$CILIUM_BIN/$name"
}

src=$(go list -m -f '{{.Dir}}' github.com/cilium/cilium)

build cilium-agent github.com/cilium/cilium/daemon
build cilium-dbg github.com/cilium/cilium/cilium-dbg

# cilium-agent-uml: the same agent with agent/uml.patch applied (two start
# hooks of Cilium's that user-mode Linux cannot satisfy become warnings: the
# BPF JIT requirement, as UML has no CONFIG_HAVE_EBPF_JIT and programs run in
# the interpreter, and the datapath signal reader, as UML has no perf events).
# Built from a patched copy of the module ($CILIUM_CACHE/src-uml) through a
# copy of this wrapper with one more replace; `go build -overlay` cannot be
# used, it refuses files under GOMODCACHE. With -trimpath the build cache
# keys do not include the source directory, so only the two patched packages
# and what imports them are compiled again.
if [[ ! -x $CILIUM_BIN/cilium-agent-uml || -n ${FORCE:-} ]]; then
	rm -rf "$CILIUM_CACHE/src-uml" "$CILIUM_CACHE/wrapper-uml"
	cp -r "$src" "$CILIUM_CACHE/src-uml"
	chmod -R u+w "$CILIUM_CACHE/src-uml"
	patch -s -p1 -d "$CILIUM_CACHE/src-uml" <"$CILIUM_DIR/agent/uml.patch"
	mkdir -p "$CILIUM_CACHE/wrapper-uml"
	cp -r go.mod go.sum tools.go mcsstub "$CILIUM_CACHE/wrapper-uml/"
	echo 'replace github.com/cilium/cilium => ../src-uml' >>"$CILIUM_CACHE/wrapper-uml/go.mod"
	log "building cilium-agent-uml (agent/uml.patch)"
	(cd "$CILIUM_CACHE/wrapper-uml" && timed cilium-agent-uml nice -n 10 go build -trimpath -ldflags "$LDFLAGS" \
		-o "$CILIUM_BIN/.cilium-agent-uml.tmp" github.com/cilium/cilium/daemon)
	mv "$CILIUM_BIN/.cilium-agent-uml.tmp" "$CILIUM_BIN/cilium-agent-uml"
fi

if [[ ! -d $CILIUM_CACHE/bpf ]]; then
	cp -r "$src/bpf" "$CILIUM_CACHE/.bpf.tmp" && chmod -R u+w "$CILIUM_CACHE/.bpf.tmp"
	mv "$CILIUM_CACHE/.bpf.tmp" "$CILIUM_CACHE/bpf"
fi
if [[ ! -d $CILIUM_CACHE/crds ]]; then
	mkdir -p "$CILIUM_CACHE/.crds.tmp"
	find "$src/pkg/k8s/apis/cilium.io/client/crds" -name '*.yaml' -exec cp {} "$CILIUM_CACHE/.crds.tmp/" \;
	chmod -R u+w "$CILIUM_CACHE/.crds.tmp"; mv "$CILIUM_CACHE/.crds.tmp" "$CILIUM_CACHE/crds"
fi
"$CILIUM_BIN/cilium-agent-uml" --version >&2 || true
log "Cilium binaries ready under $CILIUM_CACHE"
