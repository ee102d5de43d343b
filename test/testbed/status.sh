#!/usr/bin/env bash
# Report the testbed's health. Exit 0 only if every daemon runs, the API answers
# through the forwarder and every node is Ready. --quiet: exit code only.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
quiet=0; [[ ${1:-} == --quiet ]] && quiet=1
out() { ((quiet)) || echo "$@"; }
ok=1
names=(etcd kube-apiserver kube-controller-manager kube-scheduler fwd-cp fwd-root)
for n in "${NODES[@]}"; do
	names+=("containerd-$n" "kubelet-$n" "kube-proxy-$n")
	[[ ${NODE_NETPOL[$n]} == kube-router ]] && names+=("kube-router-$n")
	[[ $(cat "$STATE/cni-mode" 2>/dev/null) == flannel ]] && names+=("flanneld-$n")
done
for name in "${names[@]}"; do
	if pid_alive "$name"; then out "  running  $name (pid $(<"$RUN/$name.pid"))"; else out "  DOWN     $name"; ok=0; fi
done
if ((ok)) && [[ -x $K8S_BIN/kubectl && -f $STATE/pki/admin.kubeconfig ]]; then
	if KUBECTL get --raw /readyz >/dev/null 2>&1; then
		(($(nodes_ready "${NODES[@]}") == ${#NODES[@]})) || ok=0
		((quiet)) || KUBECTL get nodes -L topology.kubernetes.io/zone -o wide
	else
		out "  API not reachable through 127.0.0.1:$FWD_PORT"; ok=0
	fi
else
	ok=0
fi
# The IPVS node is reported, not required: up.sh brings it up on its own.
if [[ ${SVTB_IPVS_NODE:-1} != 0 ]] && ((!quiet)); then "$TESTBED_DIR/ipvs-node.sh" status || true; fi
if ((ok)); then out "testbed: healthy; kubeconfig $KUBECONFIG_DIR/kubeconfig"; exit 0; fi
out "testbed: not healthy (make testbed-up)"
exit 1
