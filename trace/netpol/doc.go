// Package netpol decides, from API objects only, whether Kubernetes
// NetworkPolicies admit a client to the backend Pods of a Service. It feeds
// the trace's policy layer: the trace reads the objects, calls Evaluate, and
// turns the Result into checks; this package does no I/O and never prints.
//
// # What it evaluates
//
// For every backend Pod and every Service port (Input.Ports, resolved per Pod
// when the targetPort is a name, the way the EndpointSlice controller
// resolves it: container port name and protocol), Evaluate returns a
// Decision:
//
//   - which NetworkPolicies of the Pod's namespace select it (podSelector)
//     and with which effective policyTypes. An empty policyTypes means
//     ["Ingress"], plus "Egress" when the policy has egress rules, exactly as
//     the API server defaults it;
//   - whether the Pod is isolated for ingress (some selecting policy has the
//     Ingress type) and, if it is, whether any ingress rule of any such policy
//     admits the client on the resolved port and protocol. Rules are OR'ed
//     within and across policies. A rule with no "from" admits every source,
//     a rule with no "ports" admits every port. A peer with only podSelector
//     means Pods of the policy's own namespace, only namespaceSelector means
//     every Pod of the selected namespaces, both means the Pods matching
//     podSelector inside the selected namespaces (AND); two separate peers are
//     OR'ed. ipBlock admits the CIDR minus its "except" CIDRs. A port's
//     protocol defaults to TCP, endPort makes a range, and a named port is
//     resolved against the destination Pod's container ports: the backend
//     Pod's for ingress, again the backend Pod's for the client's egress;
//   - when the client is a Pod: whether the NetworkPolicies of the client's
//     namespace that select it for Egress admit the backend Pod (its
//     namespace, labels and IPs) on the target port. The egress side is
//     evaluated against the backend Pod IP and targetPort, i.e. after the
//     Service's DNAT, which is what kube-proxy based and eBPF datapaths
//     present to the policy engine;
//   - optionally (Input.DNS) whether the client's egress policies admit
//     UDP and TCP 53 to the cluster DNS Pods.
//
// The client is a Pod (namespace, labels, IPs), a node or host-network
// source (IPs only), or AnyClient. For AnyClient a Decision says whether any
// source at all is admitted and which (AdmittedSources, e.g. "pods app=frontend
// in namespace shop"), so the user sees what would be let in.
//
// Answers are three-valued (Verdict). Unknown is used, never a guess, when
// an input is missing: a namespace whose labels were not given and whose
// selector needs more than kubernetes.io/metadata.name, a namespace whose
// policies could not be read (Input.UnreadNamespaces), a client IP that an
// ipBlock needs but was not given, a targetPort name the Pod does not
// define, an invalid selector or CIDR.
//
// # What it does not claim
//
// A NetworkPolicy that exists is not necessarily enforced: that depends on
// the CNI plugin (kubenet and flannel alone enforce nothing). Decisions are
// what the policies say; EnforcementNote is the sentence every caller should
// show with them. Whether node and host-network traffic is subject to policy
// at all, and whether ipBlock applies to Pod IPs, also differs between CNIs;
// decisions that rest on either carry CNIDependent and a caveat instead of a
// guess. The same holds for backend Pods with hostNetwork, for which the API
// leaves policy behaviour undefined: they are evaluated like any Pod and
// flagged.
//
// AdminNetworkPolicy and BaselineAdminNetworkPolicy (policy.networking.k8s.io
// v1alpha1, Input.AdminNetworkPolicies) are evaluated in their tier order
// (admin.go): AdminNetworkPolicies by priority, the first matching rule of
// each deciding (Allow and Deny final, Pass to the NetworkPolicies), then the
// NetworkPolicies, then the baseline where no NetworkPolicy isolates the Pod.
// For AnyClient a Pod an admin policy selects gets an Unknown answer: whom it
// admits is decided for a named client only. CNI-specific policy kinds
// (CiliumNetworkPolicy, Calico's) are not evaluated: the caller names them in
// Input.Unevaluated and no answer is then Allowed.
//
// # Cost
//
// Selectors, CIDRs and rule summaries are compiled once per policy, and the
// peer side of every rule (which depends only on the client) once per call;
// per backend Pod only podSelectors and ports are matched. BenchmarkEvaluate
// measures 5,000 Pods × 20 policies.
package netpol
