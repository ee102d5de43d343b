#!/usr/bin/env bash
# record.sh: with node.sh up, record the agent's load-balancer maps next to the
# API objects they came from, as fixtures in testdata/<step>/, through four steps:
#   initial    the Services of manifests/ with slices-initial.yaml
#   scaled     slices-scaled.yaml applied; the maps follow
#   stale      the agent stopped, then slices-stale.yaml applied; the maps do not follow
#   restarted  the agent started again; the maps follow the stale slices
# Per step: <map>.json (bpftool -j map dump: key/value as byte arrays),
# <map>.txt (bpftool map dump: the raw bytes in hex), maps.json (bpftool -j map
# show: type, key/value sizes, max entries, flags), lb-list.txt (cilium-dbg bpf
# lb list, Cilium's own decoding of the same maps), api.yaml (Services,
# EndpointSlices, Node), timing.txt.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
node() { "$CILIUM_DIR/node.sh" "$@"; }
out=$CILIUM_DIR/testdata
G=/sys/fs/bpf/tc/globals

record() { # STEP
	local d=$out/$1 m maps
	rm -rf "$d"; mkdir -p "$d"
	maps=$(node exec sh -c "ls $G | grep '^cilium_lb'")
	for m in $maps; do
		node exec bpftool -j map dump pinned "$G/$m" | python3 -m json.tool --indent 1 >"$d/$m.json"
		node exec bpftool map dump pinned "$G/$m" >"$d/$m.txt"
	done
	{
		echo "["
		local first=1
		for m in $maps; do
			((first)) || echo ","
			first=0
			node exec bpftool -j map show pinned "$G/$m" | python3 -c 'import json,sys; d=json.load(sys.stdin); d["pinned"]=sys.argv[1]; d.pop("id",None); d.pop("bytes_memlock",None); d.pop("pids",None); d.pop("memlock",None); print(json.dumps(d, sort_keys=True))' "$m"
		done
		echo "]"
	} | python3 -m json.tool --indent 1 >"$d/maps.json"
	node exec "$CILIUM_BIN/cilium-dbg" bpf lb list >"$d/lb-list.txt"
	node kubectl get services,endpointslices -n default -o yaml | strip_meta >"$d/api.yaml"
	node kubectl get node "$NODE_NAME" -o yaml | strip_meta >"$d/node.yaml"
	log "recorded $1: $(echo "$maps" | wc -w) maps in $d"
}

# strip_meta: drop the fields that change on every run (uids, times, versions).
strip_meta() {
	grep -vE '^\s*(uid|resourceVersion|creationTimestamp|generation|lastHeartbeatTime|lastTransitionTime):'
}

# wait_for IP [gone]: until `cilium-dbg bpf lb list` shows (or no longer shows) IP; prints seconds.
wait_for() {
	local ip=$1 gone=${2:-} t0 i got
	t0=$(date +%s.%N)
	for ((i = 0; i < 300; i++)); do
		got=$(node exec "$CILIUM_BIN/cilium-dbg" bpf lb list 2>/dev/null || true)
		if [[ -z $gone ]] && grep -q "$ip:" <<<"$got"; then break; fi
		if [[ -n $gone ]] && ! grep -q "$ip:" <<<"$got"; then break; fi
		sleep 0.5
	done
	((i < 300)) || die "maps did not follow ($ip ${gone:-present}) in 150s"
	printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)"
}

node status >/dev/null || die "the Cilium node is not up (node.sh up)"
mkdir -p "$out"
node kubectl apply -f "$CILIUM_DIR/manifests/slices-initial.yaml" >/dev/null
wait_for 10.78.1.11 >/dev/null
wait_for 10.78.1.12 gone >/dev/null
record initial

node kubectl apply -f "$CILIUM_DIR/manifests/slices-scaled.yaml" >/dev/null
s=$(wait_for 10.78.1.12)
wait_for 10.78.1.21 >/dev/null
record scaled
echo "scaled: slices applied -> 10.78.1.12 in the maps after ${s}s" >"$out/scaled/timing.txt"

node agent stop
node kubectl apply -f "$CILIUM_DIR/manifests/slices-stale.yaml" >/dev/null
sleep 15
record stale
echo "stale: agent stopped, slices applied, maps recorded 15 s later" >"$out/stale/timing.txt"

node agent start
s=$(wait_for 10.78.1.40)
wait_for 10.78.1.12 gone >/dev/null
record restarted
echo "restarted: agent started -> 10.78.1.40 in the maps after ${s}s" >"$out/restarted/timing.txt"
cp "$CILIUM_DIR"/manifests/*.yaml "$out/"
