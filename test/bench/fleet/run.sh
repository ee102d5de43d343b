#!/usr/bin/env bash
# Measure `kubectl svctrace --all-nodes` on a simulated fleet: a real etcd and
# kube-apiserver on loopback, kwok faking 100, 500 and 1,000 nodes and their
# Pods' lifecycle, a Service with 5,000 endpoints spread over the nodes.
# kwok serves each collector Pod's log, and the agent's exec, from a recorded
# real collector observation, so the plugin's normal read path runs.
# See README.md in this directory.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
CACHE=${SVCTRACE_CACHE:-$HOME/.cache/svctrace}
K8S_BIN=$CACHE/k8s-v1.37.2/bin
ETCD_BIN=$CACHE/etcd-v3.7.0/bin
KWOK_VERSION=v0.8.0
KWOK_DIR=$CACHE/kwok-$KWOK_VERSION
STATE=${FLEET_STATE:-/tmp/svkw}
API_PORT=${FLEET_API_PORT:-26443}
ETCD_PORT=${FLEET_ETCD_PORT:-23791}
KWOK_PORT=${FLEET_KWOK_PORT:-10347}
SIZES=${FLEET_SIZES:-100 500 1000}
ENDPOINTS=${FLEET_ENDPOINTS:-5000}
MODES=${FLEET_MODES:-ephemeral agent}
OBS=${FLEET_OBSERVATION:-$ROOT/collectors/testdata/observations/real-kube-proxy-iptables-netns.json}
KC=$STATE/admin.kubeconfig

log() { printf '[fleet %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
kctl() { "$K8S_BIN/kubectl" --kubeconfig "$KC" "$@"; }

stop_all() {
	for f in "$STATE"/*.pid; do
		[[ -f $f ]] || continue
		local pid
		pid=$(cat "$f")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$f"
	done
}
trap stop_all EXIT
trap "exit 130" INT TERM

# A killed earlier run leaves pid files and data: stop and wipe them.
stop_all
rm -rf "$STATE/etcd" "$STATE/pki" "$STATE/audit.log" "$STATE/bin"
mkdir -p "$STATE/pki" "$STATE/bin" "$STATE/logs"

[[ -x $KWOK_DIR/kwok ]] || GOBIN=$KWOK_DIR go install sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION
(cd "$ROOT" && go build -tags fleetbench -o "$STATE/bin/kubectl-svctrace" ./cmd/kubectl-svctrace)

# ------------------------------------------------------------------ PKI
P=$STATE/pki
ec_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
cert() { # NAME SUBJECT [SAN]
	local name=$1 subj=$2 san=${3:-} ext
	ec_key "$P/$name.key"
	openssl req -new -key "$P/$name.key" -subj "$subj" -out "$P/$name.csr" 2>/dev/null
	ext=$(mktemp)
	{
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		if [[ -n $san ]]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"; else echo "extendedKeyUsage=clientAuth"; fi
	} >"$ext"
	openssl x509 -req -in "$P/$name.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 30 -sha256 -extfile "$ext" -out "$P/$name.crt" 2>/dev/null
	rm -f "$ext" "$P/$name.csr"
}
ec_key "$P/ca.key"
openssl req -x509 -new -key "$P/ca.key" -sha256 -days 30 -subj "/CN=svctrace-fleet-ca" -out "$P/ca.crt" 2>/dev/null
cert apiserver "/CN=kube-apiserver" "DNS:localhost,IP:127.0.0.1,IP:10.96.0.1"
cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert admin "/O=system:masters/CN=svctrace-fleet-admin"
cert kwok "/O=system:masters/CN=kwok" "DNS:localhost,IP:127.0.0.1"
openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
kubeconfig() { # FILE CERTNAME
	cat >"$1" <<KCF
apiVersion: v1
kind: Config
clusters:
- name: fleet
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority-data: $(base64 -w0 <"$P/ca.crt")}
users:
- name: $2
  user: {client-certificate-data: $(base64 -w0 <"$P/$2.crt"), client-key-data: $(base64 -w0 <"$P/$2.key")}
contexts:
- name: fleet
  context: {cluster: fleet, user: $2}
current-context: fleet
KCF
	chmod 600 "$1"
}
kubeconfig "$KC" admin
kubeconfig "$STATE/kwok.kubeconfig" kwok

# ------------------------------------------------------------ control plane
start() { # NAME CMD...
	local name=$1; shift
	"$@" >"$STATE/logs/$name.log" 2>&1 &
	echo $! >"$STATE/$name.pid"
}
start etcd "$ETCD_BIN/etcd" --name fleet --data-dir "$STATE/etcd" \
	--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
	--listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
	--initial-cluster "fleet=http://127.0.0.1:$((ETCD_PORT + 10))" --log-level warn --quota-backend-bytes 4294967296 --unsafe-no-fsync
cat >"$STATE/audit-policy.yaml" <<'AP'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
AP
start kube-apiserver "$K8S_BIN/kube-apiserver" \
	--etcd-servers="http://127.0.0.1:$ETCD_PORT" --advertise-address=127.0.0.1 --endpoint-reconciler-type=none --bind-address=127.0.0.1 --secure-port="$API_PORT" \
	--tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
	--kubelet-client-certificate="$P/kubelet-client.crt" --kubelet-client-key="$P/kubelet-client.key" \
	--kubelet-preferred-address-types=InternalIP \
	--service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	--service-cluster-ip-range=10.96.0.0/16 --authorization-mode=RBAC --allow-privileged=true \
	--audit-policy-file="$STATE/audit-policy.yaml" --audit-log-path="$STATE/audit.log" --audit-log-maxsize=0 \
	--profiling=false -v=0
for i in $(seq 600); do
	kctl get --raw /readyz >/dev/null 2>&1 && break
	kill -0 "$(cat "$STATE/kube-apiserver.pid")" 2>/dev/null || die "kube-apiserver exited (see $STATE/logs/kube-apiserver.log)"
	((i == 600)) && die "kube-apiserver not ready after 60s"
	sleep 0.1
done
log "kube-apiserver ready on 127.0.0.1:$API_PORT"

# ------------------------------------------------------------------ kwok
# The collector a fake node runs is the recorded observation: the log of a
# collector Pod, and the stdout of an exec into an agent Pod, where the
# stand-in (standin/) reads the request on stdin and answers with the
# observation as the request's node's.
(cd "$ROOT" && go build -o "$STATE/bin/svctrace-collector" ./test/bench/fleet/standin)
# kwok reads a log file in the CRI format the kubelet writes.
printf '%s stdout F %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" "$(tr -d '\n' <"$OBS")" >"$STATE/collector.log"
jq -c . "$OBS" >"$STATE/observation.json"
sed -e "s#@STATE@#$STATE#g" -e "s#@OBS@#$STATE/observation.json#g" "$HERE/kwok.yaml" >"$STATE/kwok.yaml"
# kwok resolves an exec's command on its own PATH: the stand-in first.
PATH="$STATE/bin:$PATH" start kwok "$KWOK_DIR/kwok" --kubeconfig "$STATE/kwok.kubeconfig" --manage-all-nodes=true \
	--config "$STATE/kwok.yaml" --server-address "127.0.0.1:$KWOK_PORT" --node-ip 127.0.0.1 --node-port "$KWOK_PORT" \
	--tls-cert-file "$P/kwok.crt" --tls-private-key-file "$P/kwok.key" --cidr 10.250.0.0/16

kctl apply -f - >/dev/null <<'NS'
apiVersion: v1
kind: Namespace
metadata:
  name: svctrace-system
  labels: {pod-security.kubernetes.io/enforce: privileged}
---
# No controller manager here: the ServiceAccount it would create.
apiVersion: v1
kind: ServiceAccount
metadata: {name: default, namespace: svctrace-system}
NS
"$HERE/../../../test/bench/fleet/gen.sh" service "$ENDPOINTS" 1000 | kctl apply -f - >/dev/null
log "Service default/web with $ENDPOINTS endpoints created"

# The plugin's requests from audit-log line FROM on, as "verb resource[/sub]=count ...".
# A long-running request (watch, log, exec) is logged at ResponseStarted and
# at ResponseComplete: it is counted once.
audit_count() {
	tail -n +"$1" "$STATE/audit.log" | grep -F '"userAgent":"kubectl-svctrace' |
		jq -r 'select(.stage == "ResponseComplete" or .stage == "Panic") | .verb + " " + .objectRef.resource + (if .objectRef.subresource then "/" + .objectRef.subresource else "" end)' |
		sort | uniq -c | awk '{printf "%s %s=%s, ", $2, $3, $1}' | sed 's/, $//'
}
peak_rss() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$1"; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
# CPU seconds (user+system) the bench's own processes have used so far.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14+$15)/hz}' "/proc/$(cat "$STATE/$1.pid")/stat" 2>/dev/null || echo 0; }
# kwok's waited-for children: the stand-in collectors it ran for execs.
cpu_children() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($16+$17)/hz}' "/proc/$(cat "$STATE/$1.pid")/stat" 2>/dev/null || echo 0; }
cpu_all() { echo "$(cpu_of kube-apiserver) $(cpu_of etcd) $(cpu_of kwok) $(cpu_children kwok)"; }
# How each node's observation came back, from the trace's JSON.
transports() {
	jq -r '[.metadata.collector.nodes[]? | (.transport // (if .inspected then "?" else "not-inspected" end))] | group_by(.) | map("\(.[0])=\(length)") | join(" ")' "$1" 2>/dev/null || echo "no JSON"
}

REPEAT=${FLEET_REPEAT:-3}
nodes_now=0
{
	echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, repeat $REPEAT (medians), plugin $(cd "$ROOT" && git rev-parse --short HEAD)"
	printf '%-6s %-9s %8s %8s %9s %-16s %-34s %s\n' nodes mode wall_s rss_MiB json_MiB "load (1/5/15)" "transports" "leftovers after SIGINT"
} | tee "$STATE/results.txt"
for n in $SIZES; do
	"$HERE/gen.sh" nodes "$nodes_now" "$n" | kctl apply -f - >/dev/null
	nodes_now=$n
	until [[ $(kctl get nodes --no-headers 2>/dev/null | grep -c ' Ready') -ge $n ]]; do sleep 1; done
	for mode in $MODES; do
		kctl -n svctrace-system delete pods -l app.kubernetes.io/name=svctrace-agent --wait=false >/dev/null 2>&1 || true
		if [[ $mode == agent ]]; then
			"$HERE/gen.sh" agents 0 "$n" | kctl apply -f - >/dev/null
			until [[ $(kctl -n svctrace-system get pods -l app.kubernetes.io/name=svctrace-agent --no-headers 2>/dev/null | grep -c Running) -ge $n ]]; do sleep 1; done
		else
			until [[ $(kctl -n svctrace-system get pods -l app.kubernetes.io/name=svctrace-agent --no-headers 2>/dev/null | wc -l) -eq 0 ]]; do sleep 1; done
		fi
		walls=() rsss=()
		for r in $(seq "$REPEAT"); do
			tag=$n-$mode-$r
			from=$(($(wc -l <"$STATE/audit.log") + 1))
			read -r a0 e0 k0 c0 <<<"$(cpu_all)"
			start_s=$(date +%s.%N)
			SVCTRACE_CPUPROFILE=$STATE/cpu-$tag.prof SVCTRACE_MEMPROFILE=$STATE/mem-$tag.prof \
				/usr/bin/time -v -o "$STATE/time-$tag.txt" "$STATE/bin/kubectl-svctrace" --kubeconfig "$KC" web -n default --all-nodes \
				-o json >"$STATE/trace-$tag.json" 2>"$STATE/trace-$tag.err" || true
			wall=$(echo "$(date +%s.%N) - $start_s" | bc)
			load=$(loadavg)
			read -r a1 e1 k1 c1 <<<"$(cpu_all)"
			plugin_cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.1f", u+s}' "$STATE/time-$tag.txt")
			sleep 2
			reqs=$(audit_count "$from")
			json=$(awk -v b="$(stat -c %s "$STATE/trace-$tag.json")" 'BEGIN {printf "%.1f", b/1048576}')
			walls+=("$wall") rsss+=("$(peak_rss "$STATE/time-$tag.txt")")
			printf '%-6s %-9s %8.1f %8s %9s %-16s %-34s\n' "$n" "$mode#$r" "$wall" "${rsss[-1]}" "$json" "$load" "$(transports "$STATE/trace-$tag.json")" | tee -a "$STATE/results.txt"
			printf '       requests: %s\n' "$reqs" | tee -a "$STATE/results.txt"
			printf '       cpu seconds: plugin %s, kube-apiserver %.1f, etcd %.1f, kwok %.1f, stand-in collectors %.1f\n' "$plugin_cpu" \
				"$(echo "$a1 - $a0" | bc)" "$(echo "$e1 - $e0" | bc)" "$(echo "$k1 - $k0" | bc)" "$(echo "$c1 - $c0" | bc)" | tee -a "$STATE/results.txt"
			grep -m1 '^error' "$STATE/trace-$tag.err" | sed 's/^/       /' | tee -a "$STATE/results.txt" || true
		done
		# Ctrl-C mid-run: SIGINT once a tenth of the nodes have a collector
		# Pod (or after 3 s when the agent leaves nothing to count).
		"$STATE/bin/kubectl-svctrace" --kubeconfig "$KC" web -n default --all-nodes -o json >/dev/null 2>"$STATE/sigint-$n-$mode.err" &
		pid=$!
		for _ in $(seq 30); do
			c=$(kctl -n svctrace-system get pods -l app.kubernetes.io/name=svctrace-collector --no-headers 2>/dev/null | wc -l)
			((c >= n / 10)) && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.1
		done
		kill -INT $pid 2>/dev/null || true
		wait $pid 2>/dev/null || true
		sleep 1
		left=$(kctl -n svctrace-system get pods -l app.kubernetes.io/name=svctrace-collector --no-headers 2>/dev/null | wc -l)
		printf '%-6s %-9s %8.1f %8s %9s %-16s %-34s %s\n' "$n" "$mode" "$(printf '%s\n' "${walls[@]}" | median)" "$(printf '%s\n' "${rsss[@]}" | median)" "" "median of $REPEAT" "" "$left" | tee -a "$STATE/results.txt"
	done
done
log "results in $STATE/results.txt; traces in $STATE/trace-*.json"
if [[ -n ${FLEET_HOLD:-} ]]; then
	log "FLEET_HOLD: the cluster stays up (kubeconfig $KC) until this script is stopped"
	sleep infinity &
	wait $!
fi
