package programmed

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/expect"
)

// Calico's NAT frontend flags (felix/bpf/nat NATFlgExternalLocal, NATFlgInternalLocal).
const (
	calicoFlagExternalLocal = 0x1
	calicoFlagInternalLocal = 0x2
)

// FromCalico is one Service port as Calico's Felix programmed it in its
// eBPF NAT maps: the ClusterIP entry as the shared Port, the NodePort
// entries (one per node address and Felix's 255.255.255.255 wildcard),
// externalIPs and load-balancer IPs as its Frontends. Felix keeps one
// backend list per Service port ({id, ordinal}); an entry flagged Local
// uses its first LocalCount ordinals (the node's own backends, which Felix
// writes first), otherwise all Count. That reading of Felix's layout is
// from Calico's source (felix/bpf/nat), not checked against a running
// Felix. nil when the collector did not read the ClusterIP entry: no
// verdict on it.
func FromCalico(c *collectorapi.CalicoObservation, pe expect.PortExpectation) *Port {
	fes := calicoFrontends(c.Frontends, "clusterIP", pe.Family, pe.Protocol, uint16(pe.Port))
	if len(fes) == 0 {
		return nil
	}
	fe := fes[0]
	pp := &Port{Datapath: "calico", PortName: pe.PortName, Protocol: pe.Protocol, Port: pe.Port, Family: pe.Family,
		EBPF: &EBPFDetail{Agent: "Calico", Map: "NAT frontend map", ClusterIP: Frontend{Kind: "clusterIP", Address: fe.Address, Port: int32(fe.Port),
			Name: calicoFrontendName(fe), Found: fe.Found}}}
	if fe.Found {
		pp.Evidence = calicoEvidence(fe)
		if fe.Blackhole {
			pp.Rejected = true
		} else {
			pp.Captured = true
			pp.InternalLocal = fe.Flags&calicoFlagInternalLocal != 0
			var broken []string
			pp.Endpoints, pp.Unmatched, broken = calicoSelection(fe, pp.InternalLocal)
			pp.EBPF.ClusterIP.Broken, pp.EBPF.ClusterIP.Evidence = broken, pp.Evidence
			pp.AddAffinityTimeout(int(fe.AffinityTimeoutSecs))
		}
	}
	var ext []*collectorapi.CalicoFrontend
	if pe.NodePort != 0 {
		nps := calicoFrontends(c.Frontends, FrontendNodePort, pe.Family, pe.Protocol, uint16(pe.NodePort))
		for _, np := range nps {
			if np.Found {
				pp.NodePortFound = true
			}
		}
		ext = append(ext, nps...)
	}
	ext = append(ext, calicoFrontends(c.Frontends, FrontendExternalIP, pe.Family, pe.Protocol, uint16(pe.Port))...)
	ext = append(ext, calicoFrontends(c.Frontends, FrontendLoadBalancerIP, pe.Family, pe.Protocol, uint16(pe.Port))...)
	for _, fe := range ext {
		f := Frontend{Kind: fe.Frontend, Address: fe.Address, Port: int32(fe.Port), Name: calicoFrontendName(fe), Found: fe.Found}
		if fe.Found {
			local := fe.Flags&calicoFlagExternalLocal != 0
			f.PolicyLocal, f.Blackhole, f.Evidence = &local, fe.Blackhole, calicoEvidence(fe)
			if !fe.Blackhole {
				f.Endpoints, _, f.Broken = calicoSelection(fe, local)
			}
		}
		pp.Frontends = append(pp.Frontends, f)
	}
	return pp
}

// calicoFrontends are the entries of one kind, family, protocol and port,
// the all-sources entry first.
func calicoFrontends(fes []collectorapi.CalicoFrontend, kind string, fam corev1.IPFamily, proto string, port uint16) []*collectorapi.CalicoFrontend {
	var out []*collectorapi.CalicoFrontend
	for i := range fes {
		fe := &fes[i]
		if fe.Frontend == kind && fe.Port == port && AddressFamily(fe.Address) == fam && strings.EqualFold(fe.Protocol, proto) {
			out = append(out, fe)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return calicoAllSources(out[i]) && !calicoAllSources(out[j]) })
	return out
}

func calicoAllSources(fe *collectorapi.CalicoFrontend) bool {
	return fe.SourceCIDR == "" || strings.HasSuffix(fe.SourceCIDR, "/0")
}

func calicoEvidence(fe *collectorapi.CalicoFrontend) []string {
	out := []string{fmt.Sprintf("%s %s/%s from %s -> id %d count %d local %d affinity %ds flags %#x",
		fe.Frontend, net.JoinHostPort(fe.Address, strconv.Itoa(int(fe.Port))), fe.Protocol, orNone(fe.SourceCIDR),
		fe.ID, fe.Count, fe.LocalCount, fe.AffinityTimeoutSecs, fe.Flags)}
	for _, b := range fe.Backends {
		out = append(out, fmt.Sprintf("  {%d, %d} -> %s", fe.ID, b.Ordinal, net.JoinHostPort(b.Address, strconv.Itoa(int(b.Port)))))
	}
	return out
}

// calicoSelection is what the entry's ordinals send new connections to:
// the first LocalCount ordinals under a Local policy, all Count otherwise,
// each with an equal share; ordinals without a backend entry go nowhere
// (unmatched) and are named in broken.
func calicoSelection(fe *collectorapi.CalicoFrontend, local bool) (eps []Endpoint, unmatched float64, broken []string) {
	n := int(fe.Count)
	if local {
		n = int(fe.LocalCount)
	}
	if n > len(fe.Backends) {
		n = len(fe.Backends)
	}
	for _, b := range fe.Backends[:n] {
		if !b.Found {
			broken = append(broken, fmt.Sprintf("ordinal %d of id %d has no backend entry", b.Ordinal, fe.ID))
			continue
		}
		eps = append(eps, Endpoint{Endpoint: net.JoinHostPort(b.Address, strconv.Itoa(int(b.Port))), Share: 1 / float64(n)})
	}
	if n == 0 {
		return eps, 0, broken
	}
	return eps, float64(len(broken)) / float64(n), broken
}

func calicoFrontendName(fe *collectorapi.CalicoFrontend) string {
	s := fmt.Sprintf("%s %s/%s", fe.Frontend, net.JoinHostPort(fe.Address, strconv.Itoa(int(fe.Port))), fe.Protocol)
	if !calicoAllSources(fe) {
		s += " from " + fe.SourceCIDR
	}
	return s
}
