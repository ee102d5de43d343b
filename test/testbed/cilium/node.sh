#!/usr/bin/env bash
# A node owned by the real Cilium agent (v1.20.2, kube-proxy-free), against a
# private control plane. Never on the host kernel: the agent attaches socket-LB
# hooks at its cgroup root and writes global sysctls, so it runs inside a
# user-mode Linux guest (../uml), whose kernel is the only one it touches.
#
#   netns svcil-cp    10.77.0.1   etcd, kube-apiserver :6443, kube-controller-manager
#   netns svcil-node  the UML kernel; its tap0 is bridged with the netns' eth0
#     guest eth0      10.77.0.11  Node svcil-node1, Pod CIDR 10.78.1.0/24, cilium-agent
#   Service CIDR 10.79.0.0/16
#
#   node.sh up | down | status | exec CMD [ARG...] | kubectl ARG... | agent start|stop|restart | wait-maps
#
# up is idempotent (a healthy node is kept) and removes the leftovers of a
# killed run first; down removes everything up made, also after a kill -9.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$TESTBED_DIR/uml/lib.sh"
UML_STATE=$STATE/uml
dir=$STATE/node
P=$STATE/pki

healthy() {
	uml_alive "$UML_NAME" && [[ -e $dir/ready ]] && pid_alive kube-apiserver && pid_alive etcd &&
		KUBECTL get --raw /readyz >/dev/null 2>&1
}

down() {
	uml_stop "$UML_NAME" 20
	local d
	for d in kube-controller-manager kube-apiserver etcd; do stop_daemon "$d"; done
	for ns in "$NODE_NS" "$CP_NS"; do
		if [[ -e /var/run/netns/$ns ]]; then
			ip netns del "$ns" 2>/dev/null || { umount -l "/var/run/netns/$ns" 2>/dev/null || true; rm -f "/var/run/netns/$ns"; }
		fi
	done
	rm -rf "$STATE" "$RUN"
}

pki() {
	mkdir -p "$P"
	(
		cd "$P"
		ec_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
		ec_key ca.key
		openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=svcil-ca" -out ca.crt 2>/dev/null
		cert() { # NAME SUBJECT [SAN]
			local name=$1 subj=$2 san=${3:-} ext
			ec_key "$name.key"
			openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
			ext=$(mktemp)
			{
				echo "basicConstraints=CA:FALSE"
				echo "keyUsage=critical,digitalSignature,keyEncipherment"
				if [[ -n $san ]]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"
				else echo "extendedKeyUsage=clientAuth"; fi
			} >"$ext"
			openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -sha256 \
				-extfile "$ext" -out "$name.crt" 2>/dev/null
			rm -f "$ext" "$name.csr"
		}
		cert apiserver "/CN=kube-apiserver" \
			"DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:localhost,IP:10.79.0.1,IP:$CP_IP,IP:127.0.0.1"
		cert admin "/O=system:masters/CN=svcil-admin"
		cert controller-manager "/CN=system:kube-controller-manager"
		openssl genrsa -out sa.key 2048 2>/dev/null
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
		# The agent authenticates with a static token (system:masters: this
		# node is a test fixture, not an RBAC exercise).
		tok=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
		echo "$tok,cilium-agent,cilium-agent,system:masters" >tokens.csv
		chmod 600 tokens.csv
		server=https://$CP_IP:$API_PORT
		for u in admin controller-manager; do
			cat >"$u.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: svcil, cluster: {server: $server, certificate-authority-data: $(base64 -w0 <ca.crt)}}]
users: [{name: $u, user: {client-certificate-data: $(base64 -w0 <"$u.crt"), client-key-data: $(base64 -w0 <"$u.key")}}]
contexts: [{name: svcil, context: {cluster: svcil, user: $u}}]
current-context: svcil
KC
		done
		cat >cilium.kubeconfig <<KC
apiVersion: v1
kind: Config
clusters: [{name: svcil, cluster: {server: $server, certificate-authority-data: $(base64 -w0 <ca.crt)}}]
users: [{name: cilium-agent, user: {token: $tok}}]
contexts: [{name: svcil, context: {cluster: svcil, user: cilium-agent}}]
current-context: svcil
KC
		chmod 600 ./*.kubeconfig ./*.key
	)
}

control_plane() {
	log "starting etcd, kube-apiserver, kube-controller-manager in $CP_NS"
	start_daemon etcd "$CP_NS" "$ETCD_BIN/etcd" --name svcil --data-dir "$STATE/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster svcil=http://127.0.0.1:2380 --log-level warn
	start_daemon kube-apiserver "$CP_NS" "$K8S_BIN/kube-apiserver" \
		--etcd-servers=http://127.0.0.1:2379 --advertise-address="$CP_IP" --bind-address="$CP_IP" --secure-port="$API_PORT" \
		--tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
		--token-auth-file="$P/tokens.csv" \
		--service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-cluster-ip-range="$SERVICE_CIDR" --service-node-port-range=30000-32767 \
		--authorization-mode=RBAC --allow-privileged=true --profiling=false -v=1
	local i
	for ((i = 0; i < 900; i++)); do
		KUBECTL get --raw /readyz >/dev/null 2>&1 && break
		pid_alive kube-apiserver || die "kube-apiserver exited (see $LOGS/kube-apiserver.log)"
		sleep 0.1
	done
	KUBECTL get --raw /readyz >/dev/null 2>&1 || die "kube-apiserver not ready after 90s (see $LOGS/kube-apiserver.log)"
	start_daemon kube-controller-manager "$CP_NS" "$K8S_BIN/kube-controller-manager" \
		--kubeconfig="$P/controller-manager.kubeconfig" --authentication-kubeconfig="$P/controller-manager.kubeconfig" \
		--authorization-kubeconfig="$P/controller-manager.kubeconfig" --bind-address=127.0.0.1 \
		--service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" --use-service-account-credentials=true \
		--service-cluster-ip-range="$SERVICE_CIDR" --allocate-node-cidrs=false --leader-elect=false -v=1
}

objects() {
	log "applying Cilium CRDs, the Node, Services and EndpointSlices"
	KUBECTL apply --server-side -f "$CILIUM_CACHE/crds/" >/dev/null
	KUBECTL wait --for=condition=Established crd --all --timeout=60s >/dev/null
	KUBECTL apply -f "$CILIUM_DIR/manifests/node.yaml" >/dev/null
	# No kubelet reports the addresses; the agent takes the node IP from them.
	KUBECTL patch node "$NODE_NAME" --subresource=status --type=merge \
		-p "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$NODE_IP\"},{\"type\":\"Hostname\",\"address\":\"$NODE_NAME\"}]}}" >/dev/null
	KUBECTL apply -f "$CILIUM_DIR/manifests/services.yaml" >/dev/null
	KUBECTL apply -f "$CILIUM_DIR/manifests/slices-initial.yaml" >/dev/null
}

agent_script() {
	# Flags: kube-proxy-free (socket LB and BPF NodePort on eth0), native
	# routing in the Pod CIDR, IPAM from the Node's podCIDR, CRD identities
	# (no kvstore, no operator), no Envoy, no health probing, no iptables
	# rules (this kernel's nf_tables NAT does not load), nothing written to
	# the CNI config dir. Every path the agent writes is a guest mount.
	cat >"$dir/agent.sh" <<AG
export K8S_NODE_NAME=$NODE_NAME
# HOME would be / and /tmp is the host's /tmp, both over hostfs.
export HOME=/run/cilium-home TMPDIR=/run/cilium-home
exec $CILIUM_BIN/${SVCIL_AGENT:-cilium-agent-uml} \\
	--kube-proxy-replacement=true \\
	--k8s-kubeconfig-path=$P/cilium.kubeconfig \\
	--identity-allocation-mode=crd \\
	--enable-ipv4=true --enable-ipv6=false \\
	--enable-l7-proxy=false --enable-health-checking=false --enable-endpoint-health-checking=false \\
	--enable-hubble=false --enable-gops=false \\
	--ipam=kubernetes --k8s-require-ipv4-pod-cidr=true \\
	--routing-mode=native --ipv4-native-routing-cidr=10.78.0.0/16 \\
	--devices=eth0 --direct-routing-device=eth0 \\
	--install-iptables-rules=true --enable-ipv4-masquerade=false \\
	--cni-exclusive=false \\
	--lib-dir=/run/cilium-lib --state-dir=/run/cilium --socket-path=/run/cilium/cilium.sock \\
	--bpf-root=/sys/fs/bpf --cgroup-root=/sys/fs/cgroup \\
	${SVCIL_AGENT_EXTRA:-}
AG
}

up() {
	[[ -x $CILIUM_BIN/${SVCIL_AGENT:-cilium-agent-uml} ]] || die "no ${SVCIL_AGENT:-cilium-agent-uml} at $CILIUM_BIN (run $CILIUM_DIR/build.sh)"
	[[ -x $K8S_BIN/kube-apiserver && -x $ETCD_BIN/etcd ]] || die "no control-plane binaries (test/testbed/build.sh)"
	command -v clang-19 >/dev/null && command -v bpftool >/dev/null || die "needs clang-19 and bpftool (apt-get install clang-19 bpftool)"
	if healthy; then log "$UML_NAME already up"; return 0; fi
	local t0 i
	t0=$(date +%s.%N)
	down
	mkdir -p "$STATE" "$RUN" "$LOGS" "$dir/spool"
	ip netns add "$CP_NS"
	ip netns add "$NODE_NS"
	in_ns "$CP_NS" ip link set lo up
	in_ns "$NODE_NS" ip link set lo up
	in_ns "$CP_NS" ip link add eth0 type veth peer name eth0 netns "$NODE_NS"
	in_ns "$CP_NS" ip addr add "$CP_IP/24" dev eth0
	in_ns "$CP_NS" ip link set eth0 up
	in_ns "$CP_NS" ip route add "$POD_CIDR" via "$NODE_IP"
	in_ns "$NODE_NS" ip tuntap add dev tap0 mode tap
	in_ns "$NODE_NS" ip link add br0 type bridge
	in_ns "$NODE_NS" ip link set eth0 master br0 up
	in_ns "$NODE_NS" ip link set tap0 master br0 up
	in_ns "$NODE_NS" ip link set br0 up
	pki
	control_plane
	objects
	cat >"$dir/env" <<ENV
NODE_IP=$NODE_IP
GATEWAY=$CP_IP
CILIUM_BPF=$CILIUM_CACHE/bpf
ENV
	agent_script
	log "booting $UML_NAME (user-mode Linux, mem ${SVCIL_MEM:-1500M})"
	UML_NETNS=$NODE_NS UML_NET="vec0:transport=tap,ifname=tap0" UML_WAIT=stop UML_MEM=${SVCIL_MEM:-1500M} \
		UML_MODULES=$GUEST_MODULES uml_boot "$UML_NAME" "$CILIUM_DIR/guest.sh" "$dir"
	for ((i = 0; i < 600; i++)); do
		[[ -e $dir/ready ]] && break
		uml_alive "$UML_NAME" || { tail -n 20 "$UML_STATE/$UML_NAME/out/job.log" "$UML_STATE/$UML_NAME/console.log" >&2 || true; die "the UML kernel exited"; }
		sleep 0.1
	done
	[[ -e $dir/ready ]] || die "guest not ready after 60s"
	log "guest up in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)")s; agent log: $dir/agent.log"
	wait_maps "${SVCIL_MAPS_TIMEOUT:-600}"
}

# exec CMD...: run a command inside the guest (through its spool).
node_exec() {
	uml_alive "$UML_NAME" || die "$UML_NAME is not running"
	local id i rc q="" a
	id=$(date +%s%N)-$$
	for a in "$@"; do q+=" $(printf '%q' "$a")"; done
	printf '%s\n' "exec$q" >"$dir/spool/$id.tmp"
	mv "$dir/spool/$id.tmp" "$dir/spool/$id.cmd"
	for ((i = 0; i < ${SVCIL_EXEC_TIMEOUT:-120} * 20; i++)); do
		[[ -e $dir/spool/$id.rc ]] && break
		sleep 0.05
	done
	[[ -e $dir/spool/$id.rc ]] || die "exec in $UML_NAME timed out: $*"
	cat "$dir/spool/$id.out"
	cat "$dir/spool/$id.err" >&2
	rc=$(<"$dir/spool/$id.rc")
	rm -f "$dir/spool/$id".*
	return "$rc"
}

# wait_maps TIMEOUT_S: until the agent's Service map holds a frontend for
# every ClusterIP of the Services in manifests/services.yaml.
wait_maps() {
	local timeout=$1 t0 i want got
	want=$(grep -o 'clusterIP: [0-9.]*' "$CILIUM_DIR/manifests/services.yaml" | awk '{print $2}' | sort -u)
	for ((i = 0; i < timeout; i++)); do
		got=$(node_exec "$CILIUM_BIN/cilium-dbg" bpf lb list 2>/dev/null || true)
		local missing=0 ip
		for ip in $want; do grep -q "^$ip:" <<<"$got" || missing=1; done
		if ((missing == 0)); then
			t0=$(cat "$dir/agent.started" 2>/dev/null || echo 0)
			log "maps programmed: $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)")s after the agent started"
			return 0
		fi
		uml_alive "$UML_NAME" || die "the UML kernel exited"
		sleep 1
	done
	tail -n 30 "$dir/agent.log" >&2
	die "the agent did not program the Services' frontends in ${timeout}s (agent log: $dir/agent.log)"
}

agent() {
	case ${1:-} in
	stop)
		: >"$dir/agent.off"
		node_exec sh -c 'p=$(cat /run/cilium-agent.pid 2>/dev/null) && kill "$p"; for i in $(seq 100); do [ -e /run/cilium-agent.pid ] || exit 0; sleep 0.2; done; exit 1' ||
			die "agent did not stop"
		log "agent stopped (maps stay pinned)" ;;
	start) rm -f "$dir/agent.off"; log "agent starting" ;;
	restart) agent stop; agent start ;;
	*) die "usage: agent start|stop|restart" ;;
	esac
}

status() {
	if healthy; then
		local a=stopped
		node_exec sh -c '[ -e /run/cilium-agent.pid ]' 2>/dev/null && a=running
		echo "  running  $UML_NAME (UML pid $(<"$UML_STATE/$UML_NAME/pid"), cilium-agent $a, $NODE_IP); control plane $CP_IP:$API_PORT"
		return 0
	fi
	echo "  DOWN     $UML_NAME / control plane"
	return 1
}

[[ $(id -u) == 0 ]] || die "must run as root"
exec 9>/run/svctrace-cilium.lock
flock 9
case ${1:-} in
up) up ;;
down) down; log "down" ;;
status) status ;;
exec) shift; node_exec "$@" ;;
kubectl) shift; KUBECTL "$@" ;;
agent) shift; agent "$@" ;;
wait-maps) wait_maps "${2:-600}" ;;
*) echo "usage: $0 up | down | status | exec CMD [ARG...] | kubectl ARG... | agent start|stop|restart | wait-maps [S]" >&2; exit 2 ;;
esac
