package programmed

import (
	"cmp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// Node is what one node's kube-proxy datapath programmed for the Service:
// the owning mode, the live backend's ports (both families), leftovers of
// other backends, the section and backend errors, and per family why the
// live backend could not be read.
type Node struct {
	Mode  collectorapi.DatapathMode
	Owner string
	Ports []Port
	// Leftovers are rules of another backend, of the same family as a live
	// one, that still capture the Service.
	Leftovers []Leftover
	Errors    []SectionError
	// Unread holds, per IP family ("" for every family), why the active
	// datapath could not be read: a port missing from a read that failed is
	// not a port the programmer left out.
	Unread map[corev1.IPFamily]string
}

// Leftover is another datapath's state for the Service on a node whose
// programmer no longer writes it.
type Leftover struct {
	Active, Other, Evidence string
	Raw                     []string
}

// SectionError is a section or backend of the observation that could not be
// read.
type SectionError struct {
	Section, Error string
}

// UnreadFor says why the rules of family f could not be read, "" when they
// were (or n is nil: nothing was read to fail). A port of no known family
// is unread when either family is, IPv4's reason first.
func (n *Node) UnreadFor(f corev1.IPFamily) string {
	if n == nil {
		return ""
	}
	if why := n.Unread[""]; why != "" {
		return why
	}
	if f == "" {
		return cmp.Or(n.Unread[corev1.IPv4Protocol], n.Unread[corev1.IPv6Protocol])
	}
	return n.Unread[f]
}

// Owner names the datapath that should hold the Service on the node:
// an eBPF datapath's maps first, then kube-proxy's own /proxyMode, else the
// fingerprints of its rules.
func Owner(obs *collectorapi.Observation) (mode collectorapi.DatapathMode, description string) {
	if e := obs.Sections.EBPF; e != nil && e.Data != nil {
		if c := e.Data.Cilium; c != nil && c.Detected {
			return collectorapi.ModeCilium, "Cilium eBPF service maps (kube-proxy replacement)"
		}
		if c := e.Data.Calico; c != nil && c.Detected {
			return collectorapi.ModeCalico, "Calico eBPF NAT maps"
		}
	}
	if p := obs.Sections.Proxy; p != nil && p.Data != nil {
		if p.Data.Mode != "" {
			return p.Data.Mode, "kube-proxy in " + string(p.Data.Mode) + " mode (from /proxyMode)"
		}
		found := map[collectorapi.DatapathMode]bool{}
		for _, f := range p.Data.Fingerprints {
			if f.Found {
				found[f.Mode] = true
			}
		}
		switch {
		case found[collectorapi.ModeNFTables]:
			return collectorapi.ModeNFTables, "kube-proxy nftables rules (fingerprint; kube-proxy itself does not answer)"
		case found[collectorapi.ModeIPVS]:
			return collectorapi.ModeIPVS, "kube-proxy IPVS (fingerprint; kube-proxy itself does not answer)"
		case found[collectorapi.ModeIPTables] || found[collectorapi.ModeIPTablesLegacy]:
			return collectorapi.ModeIPTables, "kube-proxy iptables rules (fingerprint; kube-proxy itself does not answer)"
		}
	}
	return "", "no kube-proxy or eBPF datapath found"
}

// Read returns what obs says the node's kube-proxy programmed. For the eBPF
// datapaths only Mode and Owner are set: their maps are keyed by the
// Service's addresses and ports, so they are read per port expectation
// (FromCilium, FromCalico).
func Read(obs *collectorapi.Observation) *Node {
	n := &Node{Unread: map[corev1.IPFamily]string{}}
	n.Mode, n.Owner = Owner(obs)
	if IsEBPF(n.Mode) {
		return n
	}
	mode := n.Mode
	iptMode := mode == collectorapi.ModeIPTables || mode == ""
	var ipt *collectorapi.IPTablesObservation
	if s := obs.Sections.IPTables; s != nil {
		ipt = s.Data
		if s.Error != "" && iptMode {
			n.Errors = append(n.Errors, SectionError{collectorapi.SectionIPTables, s.Error})
			n.Unread[""] = s.Error
		}
	}
	var nft *collectorapi.NFTablesObservation
	if s := obs.Sections.NFTables; s != nil {
		nft = s.Data
		if s.Error != "" && (mode == collectorapi.ModeNFTables || mode == "") {
			n.Errors = append(n.Errors, SectionError{collectorapi.SectionNFTables, s.Error})
			n.Unread[""] = s.Error
		}
	}
	if nft != nil && mode == collectorapi.ModeNFTables {
		for _, t := range nft.Tables {
			if t.Error != "" {
				n.Errors = append(n.Errors, SectionError{"nftables table " + t.Family + " " + t.Name, t.Error})
				n.Unread[FamilyOf(t.Family)] = t.Error
			}
		}
	}

	// Every kube-proxy-bearing iptables backend is a candidate.
	var iptBackends []iptBackendPorts
	if ipt != nil {
		for _, b := range ipt.Backends {
			if b.KubeProxyChains {
				iptBackends = append(iptBackends, iptBackendPorts{b, FromIPTables(b)})
			}
		}
	}
	var nftPorts []Port
	nftPresent := false
	if nft != nil {
		for _, t := range nft.Tables {
			if t.Present {
				nftPresent = true
				nftPorts = append(nftPorts, FromNFTables(nft.Source, t)...)
			}
		}
	}

	if ipt != nil && iptMode {
		// A backend whose read failed may hold the live rules: its family is
		// unread unless another backend of that family, read whole,
		// captures the Service.
		for _, b := range ipt.Backends {
			if b.Error == "" {
				continue
			}
			n.Errors = append(n.Errors, SectionError{"iptables (" + b.Backend + " " + b.Family + ")", b.Error})
			covered := false
			for _, o := range iptBackends {
				covered = covered || (o.obs.Error == "" && o.obs.Family == b.Family && CaptureScore(o.ports) > 0)
			}
			if !covered {
				n.Unread[FamilyOf(b.Family)] = b.Error
			}
		}
	}

	switch mode {
	case collectorapi.ModeNFTables:
		n.Ports = nftPorts
		for _, b := range iptBackends {
			n.Leftovers = append(n.Leftovers, Leftover{Active: string(collectorapi.ModeNFTables), Other: "iptables (" + b.obs.Backend + ")",
				Evidence: "nat KUBE-SERVICES exists", Raw: iptReadEvidence(b.obs)})
		}
	case collectorapi.ModeIPTables, "":
		for _, live := range liveIPTables(iptBackends) {
			n.Ports = append(n.Ports, iptBackends[live].ports...)
			for i, b := range iptBackends {
				if i != live && sameFamily(b.obs, iptBackends[live].obs) {
					n.Leftovers = append(n.Leftovers, Leftover{Active: "iptables (" + iptBackends[live].obs.Backend + ")", Other: "iptables (" + b.obs.Backend + ")",
						Evidence: "nat KUBE-SERVICES exists in both backends (" + familyWord(b.obs.Family) + ")", Raw: iptReadEvidence(b.obs)})
				}
			}
		}
		if mode == collectorapi.ModeIPTables && nftPresent {
			n.Leftovers = append(n.Leftovers, Leftover{Active: string(collectorapi.ModeIPTables), Other: string(collectorapi.ModeNFTables), Evidence: "table kube-proxy exists"})
		}
		if mode == "" && len(n.Ports) == 0 {
			n.Ports = nftPorts
		}
	case collectorapi.ModeIPVS:
		n.Ports = FromIPVS(obs)
		// The IPVS proxier writes nat KUBE-SERVICES too (ipset matches), but
		// never a KUBE-SVC chain: one that still captures this Service was
		// written by kube-proxy in iptables mode, which neither mode removes
		// when the other starts (cmd/kube-proxy platformCleanup cleans only
		// across the iptables-based/nftables line).
		for _, b := range iptBackends {
			if CaptureScore(b.ports) > 0 {
				n.Leftovers = append(n.Leftovers, Leftover{Active: string(collectorapi.ModeIPVS), Other: "iptables (" + b.obs.Backend + ")",
					Evidence: "nat KUBE-SERVICES still jumps to a KUBE-SVC chain for this Service", Raw: iptReadEvidence(b.obs)})
			}
		}
	}
	if mode == collectorapi.ModeIPTables || mode == collectorapi.ModeNFTables {
		if vs := IPVSLeftovers(obs); len(vs) > 0 {
			n.Leftovers = append(n.Leftovers, Leftover{Active: string(mode), Other: "ipvs",
				Evidence: "IPVS virtual server(s) " + strings.Join(vs, ", ") + " for this Service still exist"})
		}
	}
	return n
}

// liveIPTables picks, for each IP family, the backend that holds kube-proxy's
// live rules: the one capturing the Service the most. kube-proxy's iptables
// proxier for IPv4 writes with iptables and its IPv6 proxier with ip6tables
// (pkg/proxy/iptables NewDualStackProxier), each keeping its own canary in
// the backend (legacy or nf_tables) it was started with, so rules of both
// families are live at once, and only a second backend of the same family
// is a leftover. The result is in family order, one index per family
// present.
func liveIPTables(bs []iptBackendPorts) []int {
	best := map[corev1.IPFamily]int{}
	var order []corev1.IPFamily
	for i, b := range bs {
		f := FamilyOf(b.obs.Family)
		j, seen := best[f]
		if !seen {
			order = append(order, f)
		}
		if !seen || CaptureScore(b.ports) > CaptureScore(bs[j].ports) {
			best[f] = i
		}
	}
	out := make([]int, 0, len(order))
	for _, f := range order {
		out = append(out, best[f])
	}
	return out
}

// LiveIPTablesBackends are the indexes of the backends in bs that hold
// kube-proxy's live rules, one per IP family (see liveIPTables); backends
// without kube-proxy's chains are never live.
func LiveIPTablesBackends(bs []collectorapi.IPTablesBackendObservation) map[int]bool {
	var cands []iptBackendPorts
	var index []int
	for i, b := range bs {
		if b.KubeProxyChains {
			cands = append(cands, iptBackendPorts{b, FromIPTables(b)})
			index = append(index, i)
		}
	}
	out := map[int]bool{}
	for _, i := range liveIPTables(cands) {
		out[index[i]] = true
	}
	return out
}

func sameFamily(a, b collectorapi.IPTablesBackendObservation) bool {
	return FamilyOf(a.Family) == FamilyOf(b.Family)
}

func familyWord(f string) string {
	if f == "" {
		return "family unknown"
	}
	return f
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
