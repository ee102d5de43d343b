package trace

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Annotations and labels the checks read.
const (
	labelServiceProxyName  = "service.kubernetes.io/service-proxy-name"
	annotationTopologyMode = "service.kubernetes.io/topology-mode"
	annotationTopologyOld  = "service.kubernetes.io/topology-aware-hints"
	managerController      = "endpointslice-controller.k8s.io"
)

// maxListed bounds the names a message lists; evidence items keep them all.
const maxListed = 10

// podCheckLimit bounds the checks of one POD code; further Pods go into the
// last check's evidence.
const podCheckLimit = 10

// judge holds one Judge call's indexes, built once so every check is
// O(endpoints + pods).
type judge struct {
	*report.Emitter
	in   *input.Input
	opts Options
	t    *report.ServiceTrace
	svc  *corev1.Service

	fqdn        string
	ports       []corev1.ServicePort // the traced ports (after --port)
	podsByName  map[string]*corev1.Pod
	podsGap     bool
	slicesGap   bool
	endpoints   []report.EndpointSummary
	epPortNames map[string]bool // slice port names of slices with endpoints
}

// judgeAPI turns the fetched objects into a ServiceTrace with the API-side
// layers decided and the node layers left empty; Assemble fills or skips
// them and finishes the trace.
func judgeAPI(in *input.Input, opts Options) *report.ServiceTrace {
	if opts.ClusterDomain == "" {
		opts.ClusterDomain = plan.DefaultClusterDomain
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	t := &report.ServiceTrace{
		APIVersion: report.APIVersion,
		Kind:       report.Kind,
		Metadata: report.Metadata{Time: now().UTC(), Context: opts.Context, SvctraceVersion: opts.Version,
			Port: opts.Port, ClusterDomain: opts.ClusterDomain},
		Service: report.ServiceSummary{Namespace: in.Namespace, Name: in.Name},
	}
	for _, name := range report.LayerOrder {
		t.Layers = append(t.Layers, report.Layer{Name: name, Checks: []report.Check{}})
	}
	fqdn := serviceFQDN(in.Name, in.Namespace, opts.ClusterDomain)
	j := &judge{Emitter: report.NewEmitter(t, templateArgs(in, fqdn)), in: in, opts: opts, t: t, svc: in.Service, fqdn: fqdn}
	if in.ServiceNotFound {
		j.notFound()
		return t
	}
	t.Service.UID = string(in.Service.UID)
	j.podsGap = in.HasGap(report.LayerEndpoints, input.ResourcePods)
	j.slicesGap = in.HasGap(report.LayerEndpoints, input.ResourceEndpointSlices)
	j.summarize()
	j.applicability()
	j.selectPorts()
	j.serviceChecks()
	if j.svc.Spec.Type != corev1.ServiceTypeExternalName {
		j.portChecks()
		j.endpointChecks()
		j.podChecks()
	}
	j.dnsChecks()
	j.gapChecks()
	judgePolicy(in, j.Emitter, t, opts.From)
	return t
}

func (j *judge) add(layer report.LayerName, c report.Check) { j.t.Layer(layer).Add(c) }

// serviceFQDN is the Service's cluster DNS name.
func serviceFQDN(name, namespace, clusterDomain string) string {
	return fmt.Sprintf("%s.%s.svc.%s", name, namespace, clusterDomain)
}

// templateArgs are the placeholders every check template may use.
func templateArgs(in *input.Input, fqdn string) report.Args {
	out := report.Args{"service": in.Name, "namespace": in.Namespace, "fqdn": fqdn}
	if svc := in.Service; svc != nil {
		out["selector"] = selectorString(svc.Spec.Selector)
		out["selectorArg"] = selectorString(svc.Spec.Selector)
		if len(svc.Spec.Selector) == 0 {
			out["selectorArg"] = "<labels of the Pods behind " + in.Name + ">"
		}
	}
	return out
}

// applicability marks the layers that do not apply to this kind of Service.
func (j *judge) applicability() {
	switch {
	case j.svc.Spec.Type == corev1.ServiceTypeExternalName:
		reason := "ExternalName Service: only the DNS CNAME applies"
		for _, name := range []report.LayerName{report.LayerEndpoints, report.LayerDatapath, report.LayerConntrack, report.LayerRoute} {
			j.t.Layer(name).Skip(reason)
		}
	case j.t.Service.Headless:
		reason := "headless Service: no ClusterIP, so kube-proxy programs nothing and clients connect to Pod IPs"
		j.t.Layer(report.LayerDatapath).Skip(reason)
		j.t.Layer(report.LayerConntrack).Skip(reason)
	}
}

func (j *judge) summarize() {
	svc := j.svc
	s := &j.t.Service
	s.Found = true
	s.Type = string(svc.Spec.Type)
	if s.Type == "" {
		s.Type = string(corev1.ServiceTypeClusterIP)
	}
	s.Headless = svc.Spec.ClusterIP == corev1.ClusterIPNone
	s.ClusterIPs = svc.Spec.ClusterIPs
	if len(s.ClusterIPs) == 0 && svc.Spec.ClusterIP != "" {
		s.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	for _, f := range svc.Spec.IPFamilies {
		s.IPFamilies = append(s.IPFamilies, string(f))
	}
	if svc.Spec.IPFamilyPolicy != nil {
		s.IPFamilyPolicy = string(*svc.Spec.IPFamilyPolicy)
	}
	s.ExternalIPs = svc.Spec.ExternalIPs
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" {
			s.LoadBalancerIngress = append(s.LoadBalancerIngress, ing.IP)
		} else if ing.Hostname != "" {
			s.LoadBalancerIngress = append(s.LoadBalancerIngress, ing.Hostname)
		}
	}
	for _, p := range svc.Spec.Ports {
		s.Ports = append(s.Ports, report.ServicePortSummary{Name: p.Name, Protocol: protocolOf(p.Protocol), Port: p.Port,
			TargetPort: targetPortString(p), NodePort: p.NodePort})
	}
	s.Selector = svc.Spec.Selector
	s.SessionAffinity = string(svc.Spec.SessionAffinity)
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		timeout := int32(corev1.DefaultClientIPServiceAffinitySeconds)
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			timeout = *c.ClientIP.TimeoutSeconds
		}
		s.SessionAffinityTimeoutSeconds = &timeout
	}
	s.ExternalTrafficPolicy = string(svc.Spec.ExternalTrafficPolicy)
	if svc.Spec.InternalTrafficPolicy != nil {
		s.InternalTrafficPolicy = string(*svc.Spec.InternalTrafficPolicy)
	}
	s.HealthCheckNodePort = svc.Spec.HealthCheckNodePort
	if svc.Spec.TrafficDistribution != nil {
		s.TrafficDistribution = *svc.Spec.TrafficDistribution
	}
	s.TopologyMode = svc.Annotations[annotationTopologyMode]
	if s.TopologyMode == "" {
		s.TopologyMode = svc.Annotations[annotationTopologyOld]
	}
	s.PublishNotReadyAddresses = svc.Spec.PublishNotReadyAddresses
	s.ExternalName = svc.Spec.ExternalName
	s.ServiceProxyName = svc.Labels[labelServiceProxyName]

	j.podsByName = make(map[string]*corev1.Pod, len(j.in.Pods))
	for i := range j.in.Pods {
		j.podsByName[j.in.Pods[i].Name] = &j.in.Pods[i]
	}

	slices := append([]discoveryv1.EndpointSlice(nil), j.in.Slices...)
	sort.Slice(slices, func(a, b int) bool { return slices[a].Name < slices[b].Name })
	e := &j.t.Endpoints
	n := 0
	for i := range slices {
		n += len(slices[i].Endpoints)
	}
	e.Endpoints = make([]report.EndpointSummary, 0, n)
	j.epPortNames = map[string]bool{}
	for i := range slices {
		sl := &slices[i]
		ports := slicePorts(sl)
		e.Slices = append(e.Slices, report.SliceSummary{Name: sl.Name, AddressType: string(sl.AddressType),
			ManagedBy: sl.Labels[discoveryv1.LabelManagedBy], Endpoints: len(sl.Endpoints), Ports: ports})
		if len(sl.Endpoints) > 0 {
			for _, p := range ports {
				j.epPortNames[p.Name] = true
			}
		}
		for _, ep := range sl.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			es := report.EndpointSummary{
				IP:          ep.Addresses[0],
				Ports:       ports,
				Ready:       ep.Conditions.Ready == nil || *ep.Conditions.Ready,
				Serving:     ep.Conditions.Serving == nil || *ep.Conditions.Serving,
				Terminating: ep.Conditions.Terminating != nil && *ep.Conditions.Terminating,
				Slice:       sl.Name,
			}
			if ep.NodeName != nil {
				es.Node = *ep.NodeName
			}
			if ep.Zone != nil {
				es.Zone = *ep.Zone
			}
			if h := ep.Hints; h != nil && (len(h.ForZones) > 0 || len(h.ForNodes) > 0) {
				es.Hints = &report.EndpointHints{}
				for _, z := range h.ForZones {
					es.Hints.Zones = append(es.Hints.Zones, z.Name)
				}
				for _, n := range h.ForNodes {
					es.Hints.Nodes = append(es.Hints.Nodes, n.Name)
				}
			}
			if ref := ep.TargetRef; ref != nil && ref.Kind == "Pod" {
				es.Pod = &report.ObjectRef{Namespace: ref.Namespace, Name: ref.Name}
			}
			e.Endpoints = append(e.Endpoints, es)
			e.Total++
			if es.Ready {
				e.Ready++
			}
			if es.Serving {
				e.Serving++
			}
			if es.Terminating {
				e.Terminating++
			}
		}
	}
	j.endpoints = e.Endpoints
}

// gapChecks turns every failed read into a check: unknown in its layer, or
// skipped (API003) for the optional node list.
func (j *judge) gapChecks() {
	for _, g := range j.in.Gaps {
		if g.Resource == input.ResourceNodes || g.Resource == input.ResourceEvents {
			// Optional reads: the layer is still judged without them.
			code := report.CodeAPINodes
			if g.Resource == input.ResourceEvents {
				code = report.CodeAPIEvents
			}
			c := report.NewCheck(code, report.Args{"error": g.Short(), "verb": g.Verb, "namespace": g.Namespace})
			c.Status = report.StatusSkipped
			j.add(report.LayerEndpoints, c)
			continue
		}
		scopeFlag := "--all-namespaces"
		if g.Namespace != "" {
			scopeFlag = "-n " + g.Namespace
		}
		args := report.Args{"verb": g.Verb, "resource": g.Resource, "scope": g.Scope(), "scopeFlag": scopeFlag,
			"impact": g.Impact, "error": g.Short()}
		code := report.CodeAPIError
		if g.Forbidden {
			code = report.CodeAPIForbidden
		}
		c := report.NewCheck(code, args)
		c.Status = report.StatusUnknown
		l := j.t.Layer(g.Layer)
		l.Add(c)
		if l.Reason == "" {
			l.Reason = g.Describe()
			if g.Forbidden {
				l.Reason += " (forbidden)"
			}
		}
	}
}

func slicePorts(sl *discoveryv1.EndpointSlice) []report.EndpointPort {
	var out []report.EndpointPort
	for _, p := range sl.Ports {
		ep := report.EndpointPort{}
		if p.Name != nil {
			ep.Name = *p.Name
		}
		if p.Port != nil {
			ep.Port = *p.Port
		}
		if p.Protocol != nil {
			ep.Protocol = string(*p.Protocol)
		} else {
			ep.Protocol = string(corev1.ProtocolTCP)
		}
		out = append(out, ep)
	}
	return out
}

func protocolOf(p corev1.Protocol) string {
	if p == "" {
		return string(corev1.ProtocolTCP)
	}
	return string(p)
}

func targetPortString(p corev1.ServicePort) string {
	if p.TargetPort.IntVal == 0 && p.TargetPort.StrVal == "" {
		return ""
	}
	return p.TargetPort.String()
}

// portLabel names a Service port the way messages show it: "http 80/TCP" or "80/TCP".
func portLabel(p corev1.ServicePort) string {
	s := fmt.Sprintf("%d/%s", p.Port, protocolOf(p.Protocol))
	if p.Name != "" {
		s = p.Name + " " + s
	}
	return s
}

func selectorString(sel map[string]string) string {
	if len(sel) == 0 {
		return "<none>"
	}
	return labels.SelectorFromSet(sel).String()
}

// listNames shows at most maxListed names and counts the rest.
func listNames(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxListed], ", "), len(names)-maxListed)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// skipNodeLayers marks the node layers skipped and says the live DNS query
// did not run.
func skipNodeLayers(t *report.ServiceTrace, reason string) {
	for _, name := range report.NodeLayers {
		t.Layer(name).Skip(reason)
	}
	skipLiveDNS(t, reason)
}

// fieldValue and fieldItems build evidence fields.
func fieldValue(key, value string) report.Field { return report.Field{Key: key, Value: value} }

func fieldItems(key string, items []string) report.Field { return report.Field{Key: key, Items: items} }
