#!/usr/bin/env bash
# Generate the testbed PKI and kubeconfigs into $STATE/pki (called by up.sh).
#
#   pki.sh              a new CA and every certificate and kubeconfig
#   pki.sh node NAME    only NAME's kubelet certificate and kubeconfig, signed
#                       by the existing CA (a node added to a running testbed)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

P=$STATE/pki
mkdir -p "$P"
cd "$P"

ec_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# cert NAME SUBJECT [SAN] : client (and server when SAN given) certificate signed by the CA
cert() {
	local name=$1 subj=$2 san=${3:-} ext
	ec_key "$name.key"
	openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
	ext=$(mktemp)
	{
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		if [[ -n $san ]]; then
			echo "extendedKeyUsage=serverAuth,clientAuth"
			echo "subjectAltName=$san"
		else
			echo "extendedKeyUsage=clientAuth"
		fi
	} >"$ext"
	openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -sha256 \
		-extfile "$ext" -out "$name.crt" 2>/dev/null
	rm -f "$ext" "$name.csr"
}

# kubeconfig FILE SERVER CERTNAME
kubeconfig() {
	cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: svctrace-testbed
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 <ca.crt)
users:
- name: $3
  user:
    client-certificate-data: $(base64 -w0 <"$3.crt")
    client-key-data: $(base64 -w0 <"$3.key")
contexts:
- name: svctrace-testbed
  context:
    cluster: svctrace-testbed
    user: $3
current-context: svctrace-testbed
KC
	chmod 600 "$1"
}
in_cluster=https://$(host_port "$CP_IP" "$API_PORT")

if [[ ${1:-} == node ]]; then
	[[ -n ${2:-} && -f ca.key ]] || die "pki.sh node NAME: needs a node name and the testbed CA ($P/ca.key)"
	cert "kubelet-$2" "/O=system:nodes/CN=system:node:$2"
	kubeconfig "kubelet-$2.kubeconfig" "$in_cluster" "kubelet-$2"
	exit 0
fi

ec_key ca.key
openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=svctrace-testbed-ca" -out ca.crt 2>/dev/null

# Both families' kubernetes Service and control-plane addresses, whatever the
# cluster's families: the certificate serves every setting.
cert apiserver "/CN=kube-apiserver" \
	"DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:10.96.0.1,IP:fd00:10:96::1,IP:$CP_IP4,IP:$CP_IP6,IP:127.0.0.1"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert admin "/O=system:masters/CN=svctrace-testbed-admin"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
cert kube-proxy "/CN=system:kube-proxy"
cert kube-router "/CN=system:kube-router"
cert flannel "/CN=system:flannel"
cert svctrace-user "/CN=svctrace-user"
for n in "${NODES[@]}" "$IPVS_NODE"; do cert "kubelet-$n" "/O=system:nodes/CN=system:node:$n"; done
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null

kubeconfig admin.kubeconfig "https://127.0.0.1:$FWD_PORT" admin                 # root netns, via forwarder
kubeconfig restricted.kubeconfig "https://127.0.0.1:$FWD_PORT" svctrace-user     # root netns, svctrace RBAC only
kubeconfig admin-cp.kubeconfig "$in_cluster" admin                              # inside the netns
kubeconfig controller-manager.kubeconfig "$in_cluster" controller-manager
kubeconfig scheduler.kubeconfig "$in_cluster" scheduler
kubeconfig kube-proxy.kubeconfig "$in_cluster" kube-proxy
kubeconfig kube-router.kubeconfig "$in_cluster" kube-router
kubeconfig flannel.kubeconfig "$in_cluster" flannel
for n in "${NODES[@]}" "$IPVS_NODE"; do kubeconfig "kubelet-$n.kubeconfig" "$in_cluster" "kubelet-$n"; done
