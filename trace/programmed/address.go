package programmed

import (
	"fmt"
	"net/netip"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// AddressFrontends are the externalIP and load-balancer IP entries of a
// port of kube-proxy's iptables or nftables mode, one per address the API
// lists (externalIPs, loadBalancerIPs: expect.PortExpectation's, the ones
// that family's proxier programs), found or not, with the kind the API
// gives it. An address the reader did not see either way (the iptables
// entry rules established by reference counts, which prove counts and not
// addresses; an nftables key that was not looked up) is left out:
// undetermined, never missing. nil for the other datapaths, whose
// per-address entries are in pp.Frontends already.
func AddressFrontends(pp *Port, externalIPs, loadBalancerIPs []string) []Frontend {
	if pp == nil || (len(pp.AddressEntries) == 0 && !pp.AddressEntriesRead) {
		return nil
	}
	var out []Frontend
	for _, list := range []struct {
		kind  string
		addrs []string
	}{{FrontendExternalIP, externalIPs}, {FrontendLoadBalancerIP, loadBalancerIPs}} {
		for _, addr := range list.addrs {
			f, ok := addressEntry(pp, addr)
			if !ok {
				continue
			}
			f.Kind, f.Address, f.Port = list.kind, addr, pp.Port
			f.Name = fmt.Sprintf("%s %s/%s", list.kind, netip.AddrPortFrom(parseAddr(addr), uint16(pp.Port)), pp.Protocol)
			if len(f.Evidence) == 0 {
				f.Evidence = pp.Evidence // the port's entry rules, read whole
			}
			out = append(out, f)
		}
	}
	return out
}

// addressEntry is pp's entry for addr, a not-found one when the reader saw
// every entry and none is for addr, and false when nothing says either way.
func addressEntry(pp *Port, addr string) (Frontend, bool) {
	a := parseAddr(addr)
	var missing *Frontend
	for _, e := range pp.AddressEntries {
		if parseAddr(e.Address) != a {
			continue
		}
		if e.Found {
			return e, true
		}
		missing = &e
	}
	switch {
	case missing != nil:
		return *missing, true
	case pp.AddressEntriesRead:
		table := "nat KUBE-SERVICES"
		if len(pp.AddressEntries) > 0 {
			table = pp.AddressEntries[0].Table
		}
		return Frontend{Table: table}, true
	}
	return Frontend{}, false
}

// parseAddr is an address as a comparable value, IPv4-mapped IPv6 as IPv4;
// the zero Addr when it does not parse.
func parseAddr(s string) netip.Addr {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(s)
	return a.Unmap()
}

// iptAddressEntries are the port's KUBE-SERVICES rules for an externalIP
// or a load-balancer IP, as syncProxyRules writes them when the Service has
// endpoints ("Capture externalIPs": "-d <externalIP> --dport <port> -j
// KUBE-EXT-…", comment "<svc> external IP"; "Capture load-balancer
// ingress": the same to KUBE-FW-… when loadBalancerSourceRanges are set,
// comment "<svc> loadbalancer IP"; an ingress IP of ipMode Proxy is not in
// LoadBalancerVIPs and gets none). read says the reader saw every such
// rule: KUBE-SERVICES was read rule by rule, not proved by reference counts.
func iptAddressEntries(b collectorapi.IPTablesBackendObservation, p collectorapi.IPTablesPortObservation) (entries []Frontend, read bool) {
	read = b.EntryProof != collectorapi.IPTablesEntryProofReferences && b.Error == ""
	for _, e := range p.Entry {
		if (e.Kind != FrontendExternalIP && e.Kind != FrontendLoadBalancerIP) || e.Destination == "" || e.NotDest {
			continue
		}
		entries = append(entries, Frontend{Address: e.Destination, Found: true, Table: "nat KUBE-SERVICES", Evidence: []string{e.Raw}})
	}
	return entries, read
}

// nftAddressEntries are the port's service-ips lookups other than its
// ClusterIPs, as syncProxyRules writes them when the Service has
// endpoints ("Capture externalIPs", "Capture load-balancer ingress": one
// element "<ip> . <proto> . <port> : goto external-…" per address; a
// load-balancer IP's firewall goes into firewall-ips, not here). Each is
// the lookup of one address the request listed, found or not.
func nftAddressEntries(p collectorapi.NFTablesPortObservation, clusterIPs map[netip.Addr]bool) []Frontend {
	var out []Frontend
	for _, e := range p.ServiceIPs {
		addr, _, _ := strings.Cut(e.Key, " . ")
		if clusterIPs[parseAddr(addr)] || !parseAddr(addr).IsValid() {
			continue
		}
		f := Frontend{Address: addr, Found: e.Found, Table: "map " + e.Map}
		if e.Found {
			f.Evidence = []string{fmt.Sprintf("map %s: %s : %s", e.Map, e.Key, e.Verdict)}
		} else {
			f.Evidence = []string{fmt.Sprintf("map %s: no element %s", e.Map, e.Key)}
		}
		out = append(out, f)
	}
	return out
}
