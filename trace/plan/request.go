package plan

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
)

// CollectRequest builds what a collector on node is asked to look at: the
// Service as kube-proxy sees it, every endpoint of its slices, the Pod IPs to
// route to (endpoints plus extra, e.g. the --from Pod), and the cluster DNS.
// The collector needs nothing else: it never talks to the API server.
func CollectRequest(in *input.Input, node, clusterDomain string, extraPodIPs ...string) *collectorapi.Request {
	return newRequestTemplate(in, clusterDomain, extraPodIPs...).forNode(node)
}

// requestTemplate is the part of a collector request every node shares,
// built once per trace: with 5,000 endpoints on 1,000 nodes, building it per
// node was five million endpoint conversions, sorts and Pod lookups. A node's
// request differs only in its name, the Pod UIDs of its own endpoints and the
// node addresses its NodePorts are probed at.
type requestTemplate struct {
	base   collectorapi.Request
	podUID map[string]string
	// nodePort: the Service has a NodePort or a health-check node port.
	nodePort bool
	in       *input.Input
	// readyIPs are the Ready nodes with an InternalIP, by name.
	readyIPs []collectorapi.NodeAddress
	// families are the Service's IP families (its ClusterIPs'): the
	// proxier of a family the Service lacks does not serve its NodePorts
	// (kube-proxy's ServiceChangeTracker skips a Service without a
	// ClusterIP of its family), so no node address of that family is
	// probed. Empty: no ClusterIP to tell, every family.
	families map[corev1.IPFamily]bool
	// enc holds the encoded parts every node's request shares.
	enc requestEncoder
}

func newRequestTemplate(in *input.Input, clusterDomain string, extraPodIPs ...string) *requestTemplate {
	t := &requestTemplate{in: in}
	svc := in.Service
	req := &t.base
	*req = collectorapi.Request{
		APIVersion:    collectorapi.RequestAPIVersion,
		Kind:          "CollectRequest",
		ClusterDomain: clusterDomain,
	}
	if svc == nil {
		return t
	}
	spec := collectorapi.ServiceSpec{
		Namespace:             svc.Namespace,
		Name:                  svc.Name,
		Type:                  string(svc.Spec.Type),
		ClusterIPs:            svc.Spec.ClusterIPs,
		ExternalIPs:           svc.Spec.ExternalIPs,
		ExternalName:          svc.Spec.ExternalName,
		SessionAffinity:       string(svc.Spec.SessionAffinity),
		ExternalTrafficPolicy: string(svc.Spec.ExternalTrafficPolicy),
		HealthCheckNodePort:   svc.Spec.HealthCheckNodePort,
	}
	if len(spec.ClusterIPs) == 0 && svc.Spec.ClusterIP != "" {
		spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	if svc.Spec.InternalTrafficPolicy != nil {
		spec.InternalTrafficPolicy = string(*svc.Spec.InternalTrafficPolicy)
	}
	if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		spec.AffinityTimeoutSecs = *c.ClientIP.TimeoutSeconds
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" && (ing.IPMode == nil || *ing.IPMode == corev1.LoadBalancerIPModeVIP) {
			spec.LoadBalancerIPs = append(spec.LoadBalancerIPs, ing.IP)
		}
	}
	t.families = map[corev1.IPFamily]bool{}
	for _, ip := range spec.ClusterIPs {
		if ip != "" && ip != corev1.ClusterIPNone {
			t.families[programmed.AddressFamily(ip)] = true
		}
	}
	t.nodePort = svc.Spec.HealthCheckNodePort > 0
	for _, p := range svc.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		spec.Ports = append(spec.Ports, collectorapi.ServicePort{Name: p.Name, Protocol: proto, Port: p.Port,
			NodePort: p.NodePort, TargetPort: p.TargetPort.String()})
		t.nodePort = t.nodePort || p.NodePort > 0
	}
	req.Service = spec

	t.podUID = podUIDs(in)
	seen := map[string]bool{}
	addIP := func(ip string) {
		if ip != "" && !seen[ip] {
			seen[ip] = true
			req.PodIPs = append(req.PodIPs, ip)
		}
	}
	for i := range in.Slices {
		sl := &in.Slices[i]
		ports := map[string]int32{}
		for _, p := range sl.Ports {
			if p.Port == nil {
				continue
			}
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			ports[name] = *p.Port
		}
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ep := collectorapi.Endpoint{
				IP:          e.Addresses[0],
				Ports:       ports,
				Ready:       e.Conditions.Ready == nil || *e.Conditions.Ready,
				Serving:     e.Conditions.Serving == nil || *e.Conditions.Serving,
				Terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
			}
			if e.NodeName != nil {
				ep.NodeName = *e.NodeName
			}
			if e.Zone != nil {
				ep.Zone = *e.Zone
			}
			if e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
				ep.PodName = e.TargetRef.Name
			}
			req.Endpoints = append(req.Endpoints, ep)
			addIP(ep.IP)
		}
	}
	sort.SliceStable(req.Endpoints, func(i, j int) bool { return req.Endpoints[i].IP < req.Endpoints[j].IP })
	for _, ip := range extraPodIPs {
		addIP(ip)
	}
	if d := in.DNSService; d != nil {
		for _, ip := range d.Spec.ClusterIPs {
			if ip != "" && ip != corev1.ClusterIPNone {
				req.ClusterDNS = append(req.ClusterDNS, ip)
			}
		}
	}
	if t.nodePort {
		names := make([]string, 0, len(in.Nodes))
		for name := range in.Nodes {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if n := in.Nodes[name]; n != nil && input.NodeReady(n) {
				for _, ip := range t.servedIPs(n) {
					t.readyIPs = append(t.readyIPs, collectorapi.NodeAddress{Node: name, IP: ip})
				}
			}
		}
	}
	return t
}

// forNode is node's request: the shared part with the node's name, the Pod
// UIDs of the endpoints on it, and its node addresses.
func (t *requestTemplate) forNode(node string) *collectorapi.Request {
	req := t.base
	req.NodeName = node
	if t.in.Service == nil {
		return &req
	}
	req.Endpoints = slices.Clone(t.base.Endpoints)
	for i := range req.Endpoints {
		ep := &req.Endpoints[i]
		if ep.NodeName == node && ep.PodName != "" {
			// Only this node's endpoints: the sockets section reads
			// local Pods, and the request travels as one Pod argument.
			ep.PodUID = t.podUID[ep.PodName]
		}
	}
	req.NodeAddresses = t.nodePortAddresses(node)
	return &req
}

// podUIDs maps the name of every Pod the trace already read (the selector's
// Pods and the endpoints' targetRef Pods) to its UID, so a collector can find
// the Pod's processes on its node without another API request. A targetRef
// whose Pod was not read gets no UID: its name alone could be a recreated Pod's.
func podUIDs(in *input.Input) map[string]string {
	out := make(map[string]string, len(in.Pods)+len(in.ExtraPods))
	for i := range in.Pods {
		out[in.Pods[i].Name] = string(in.Pods[i].UID)
	}
	for name, p := range in.ExtraPods {
		if p != nil {
			out[name] = string(p.UID)
		}
	}
	return out
}

// nodePortAddresses are the node addresses a Service with NodePorts (or a
// health-check node port) is probed at from node: its own InternalIP and the
// first other Ready node's, by name, among the Node objects the trace read.
func (t *requestTemplate) nodePortAddresses(node string) []collectorapi.NodeAddress {
	if !t.nodePort {
		return nil
	}
	var out []collectorapi.NodeAddress
	if n := t.in.Nodes[node]; n != nil {
		for _, ip := range t.servedIPs(n) {
			out = append(out, collectorapi.NodeAddress{Node: node, IP: ip})
		}
	}
	// One other Ready node's address per family: a NodePort is served on
	// every node, and a dual-stack node serves it in each of the
	// Service's families.
	other := ""
	for _, a := range t.readyIPs {
		if a.Node == node || (other != "" && a.Node != other) {
			continue
		}
		other = a.Node
		out = append(out, a)
	}
	return out
}

// servedIPs are the node's InternalIPs in the Service's families: the
// addresses kube-proxy serves the Service's NodePorts on.
func (t *requestTemplate) servedIPs(n *corev1.Node) []string {
	ips := internalIPs(n)
	if len(t.families) == 0 {
		return ips
	}
	return slices.DeleteFunc(ips, func(ip string) bool { return !t.families[programmed.AddressFamily(ip)] })
}

// internalIPs are the node's InternalIP addresses, the first of each IP
// family (a dual-stack node has one per family).
func internalIPs(n *corev1.Node) []string {
	var out []string
	seen := map[corev1.IPFamily]bool{}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			if f := programmed.AddressFamily(a.Address); !seen[f] {
				seen[f] = true
				out = append(out, a.Address)
			}
		}
	}
	return out
}
