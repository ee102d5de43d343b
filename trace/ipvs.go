package trace

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// What kube-proxy's IPVS proxier (pkg/proxy/ipvs/proxier.go, v1.37) programs
// besides the virtual servers themselves, and what breaks when it is not
// there. The shared comparison (comparePort) judges the ClusterIP virtual
// server's real servers, compareFrontends the external ones; judgeIPVSPort
// adds the IPVS-only parts:
//
//   - kube-ipvs0 holds every ClusterIP, externalIP and LB IP: an address that
//     is not local is routed, not delivered, so IPVS (at LOCAL_IN) never sees
//     the Pods' traffic to it.
//   - KUBE-IPVS-FILTER (filter INPUT) REJECTs NEW connections to addresses in
//     KUBE-IPVS-IPS unless the IP,proto:port is in KUBE-CLUSTER-IP,
//     KUBE-EXTERNAL-IP(-LOCAL) or KUBE-LOAD-BALANCER: a missing entry there
//     rejects the Service.
//   - The other sets steer masquerading: KUBE-NODE-PORT-<proto> (NodePorts
//     are masqueraded unless in the -LOCAL set), KUBE-NODE-PORT-LOCAL-<proto>
//     and KUBE-LOAD-BALANCER-LOCAL (ETP Local keeps the client's address),
//     KUBE-LOOP-BACK (hairpin: a Pod reaching itself through the Service).
//   - External virtual servers (NodePort on every node IP, externalIPs, LB
//     IPs) carry the ETP endpoints: local ones under ETP Local, or, with no
//     local endpoint, the cluster ones (PR 97081: local Pods keep working,
//     external clients get replies from other nodes' Pods and drop them).
//   - Real servers of weight 0 are being drained (graceful_termination.go):
//     kube-proxy deletes them once their connection counts reach 0, checked
//     every minute.
//   - The sysctls NewProxier sets: vs/conntrack=1 (else IPVS connections get
//     no conntrack entry and the MASQUERADE rules do not apply),
//     vs/expire_nodest_conn=1 (else connections to a deleted real server
//     hang until they time out), vs/expire_quiescent_template=1 (else
//     persistence keeps clients on a weight-0 real server), and
//     vs/conn_reuse_mode=0 on kernels before 5.9 (else a reused source port
//     waits about a second for a new connection).

// judgeIPVSPort judges the IPVS-only parts of one Service port and returns
// how many problems it reported. The external virtual servers (each
// externalIP, LB IP and node address × NodePort) are pp.Frontends, compared
// by compareFrontends like every datapath's external entries; here are the
// draining real servers, kube-ipvs0 and the ipsets.
func (nj *nodeJudge) judgeIPVSPort(node string, obs *collectorapi.Observation, pe expect.PortExpectation, pp *programmed.Port, with func(report.Args) report.Args) int {
	s := obs.Sections.IPVS
	if s == nil || s.Data == nil || pp == nil || pp.IPVS == nil {
		return 0
	}
	data := s.Data
	problems := 0

	var draining []string
	for _, vs := range pp.IPVS.VirtualServers {
		if vs.Frontend != "clusterIP" {
			continue
		}
		for _, rs := range vs.RealServers {
			if rs.Weight == 0 {
				draining = append(draining, fmt.Sprintf("%s (active %d, inactive %d)", net.JoinHostPort(rs.Address, strconv.Itoa(int(rs.Port))), rs.ActiveConns, rs.InactiveConns))
			}
		}
	}
	if len(draining) > 0 {
		sort.Strings(draining)
		nj.EmitNode(report.CodeDPIPVSDraining, node, with(report.Args{"count": strconv.Itoa(len(draining)), "servers": listNames(draining)}), nil,
			fieldItems("draining", draining))
	}

	// kube-ipvs0.
	if k := data.KubeIPVS0; k != nil && len(k.Checked) > 0 && k.Error == "" {
		// An address the node already holds on another link (a node IP
		// used as externalIP or LB IP) is delivered locally without
		// kube-ipvs0, and syncProxyRules does not bind it there
		// (shouldBind := !nodeAddressSet.Has(address)).
		bound := map[string]bool{}
		for _, a := range append(slices.Clone(k.Addresses), k.LocalElsewhere...) {
			bound[a] = true
		}
		var notBound []string
		for _, a := range k.Checked {
			if programmed.AddressFamily(a) == pe.Family && !bound[a] {
				notBound = append(notBound, a)
			}
		}
		if len(notBound) > 0 {
			nj.EmitNode(report.CodeDPIPVSNotOnDummy, node, with(report.Args{"addresses": listNames(notBound), "link": linkState(k)}), nil,
				fieldItems("notBound", notBound), fieldItems("bound", k.Addresses))
			problems++
		}
	}

	// ipsets.
	if len(data.IPSets) > 0 {
		rejected, unmasqueraded, degraded := ipvsSetFindings(data.IPSets, pe)
		if len(unmasqueraded) > 0 {
			// The same consequence as an iptables external chain that does
			// not mark for masquerade: the same finding.
			nj.EmitNode(report.CodeDPMasqExternal, node, with(report.Args{"chain": "KUBE-NODE-PORT (its ipset lacks " + listNames(unmasqueraded) + ")"}), nil,
				fieldItems("missing", unmasqueraded))
			problems++
		}
		if len(rejected) > 0 {
			nj.EmitNode(report.CodeDPIPVSSetReject, node, with(report.Args{"entries": listNames(rejected)}), nil, fieldItems("missing", rejected))
			problems++
		}
		if len(degraded) > 0 {
			nj.EmitNode(report.CodeDPIPVSSetMissing, node, with(report.Args{"entries": listNames(degraded)}), nil, fieldItems("missing", degraded))
			problems++
		}
	}
	return problems
}

// ipvsSetFindings splits the missing entries of this port into those that
// make KUBE-IPVS-FILTER reject the Service, those that leave NodePort
// traffic under externalTrafficPolicy Cluster unmasqueraded, and those that
// only change whether the client's address is kept or hairpin traffic.
// KUBE-NODE-PORT (nat) mirrors kube-proxy's ipsetWithIptablesChain: the
// KUBE-NODE-PORT-LOCAL-<proto> set RETURNs first, then the
// KUBE-NODE-PORT-<proto> set jumps to KUBE-MARK-MASQ; syncProxyRules puts
// every NodePort in the second and the ETP Local ones in the first too, so
// an ETP Local port missing from the second changes nothing.
func ipvsSetFindings(sets []collectorapi.IPSetMembership, pe expect.PortExpectation) (rejected, unmasqueraded, degraded []string) {
	portSuffix := fmt.Sprintf(",%s:%d", strings.ToLower(pe.Protocol), pe.Port)
	nodePort := strconv.Itoa(int(pe.NodePort))
	local := map[string]bool{}
	for _, e := range pe.Local {
		local[fmt.Sprintf("%s,%s:%d,%s", e.IP, strings.ToLower(pe.Protocol), e.Port, e.IP)] = true
	}
	for _, m := range sets {
		if m.Found || m.Error != "" {
			continue
		}
		ipv6 := strings.HasPrefix(m.Set, "KUBE-6-")
		if ipv6 != (pe.Family == corev1.IPv6Protocol) {
			continue
		}
		desc := fmt.Sprintf("%s in %s", m.Entry, m.Set)
		if m.SetMissing {
			desc += " (the set does not exist)"
		}
		switch m.Kind {
		case "clusterIP":
			if strings.HasSuffix(m.Entry, portSuffix) {
				rejected = append(rejected, desc)
			}
		case "externalIP":
			if strings.HasSuffix(m.Entry, portSuffix) && m.Local == pe.ExternalPolicyLocal {
				rejected = append(rejected, desc)
			}
		case "loadBalancerIP":
			if !strings.HasSuffix(m.Entry, portSuffix) {
				continue
			}
			if !m.Local {
				rejected = append(rejected, desc)
			} else if pe.ExternalPolicyLocal {
				degraded = append(degraded, desc+": external traffic is masqueraded, the client's address is lost")
			}
		case "nodePort":
			if pe.NodePort == 0 || (m.Entry != nodePort && !strings.HasSuffix(m.Entry, ":"+nodePort)) {
				continue
			}
			if !m.Local {
				if !pe.ExternalPolicyLocal {
					unmasqueraded = append(unmasqueraded, desc)
				}
			} else if pe.ExternalPolicyLocal {
				degraded = append(degraded, desc+": NodePort traffic is masqueraded, the client's address is lost")
			}
		case "loopback":
			if local[m.Entry] {
				degraded = append(degraded, desc+": a Pod reaching itself through the Service gets no reply (no hairpin masquerade)")
			}
		}
	}
	return rejected, unmasqueraded, degraded
}

// judgeIPVSNode judges the node-wide IPVS settings once per node.
func (nj *nodeJudge) judgeIPVSNode(node string, obs *collectorapi.Observation) {
	s := obs.Sections.IPVS
	if s == nil || s.Data == nil || !s.Data.Available || len(s.Data.Sysctls) == 0 {
		return
	}
	sys := s.Data.Sysctls
	type rule struct {
		name, want, effect string
		applies            bool
	}
	rules := []rule{
		{"net.ipv4.vs.conntrack", "1", "IPVS connections get no conntrack entry, so kube-proxy's MASQUERADE rules do not apply to them", true},
		{"net.ipv4.vs.expire_nodest_conn", "1", "connections to a deleted real server are not reset but hang until they time out", true},
		{"net.ipv4.vs.expire_quiescent_template", "1", "session persistence keeps sending clients to real servers of weight 0", true},
		{"net.ipv4.vs.conn_reuse_mode", "0", "on this kernel a new connection that reuses a source port waits about a second (the IPVS port-reuse bug fixed in 5.9)",
			kernelBefore(s.Data.KernelRelease, 5, 9)},
	}
	var off, raw []string
	for _, r := range rules {
		v, ok := sys[r.name]
		if !ok {
			continue
		}
		raw = append(raw, r.name+" = "+v)
		if r.applies && v != r.want {
			off = append(off, fmt.Sprintf("%s=%s (kube-proxy sets %s: %s)", r.name, v, r.want, r.effect))
		}
	}
	if len(off) > 0 {
		nj.EmitNode(report.CodeDPIPVSSysctl, node, report.Args{"settings": strings.Join(off, "; ")}, raw, fieldItems("settings", off))
	}
}

// kernelBefore says whether release (uname -r) is older than major.minor;
// false when it does not parse.
func kernelBefore(release string, major, minor int) bool {
	f := strings.FieldsFunc(release, func(r rune) bool { return r == '.' || r == '-' || r == '+' })
	if len(f) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(f[0])
	mi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma < major || (ma == major && mi < minor)
}

func linkState(k *collectorapi.LinkAddresses) string {
	if !k.Present {
		return "kube-ipvs0 does not exist"
	}
	if len(k.Addresses) == 0 {
		return "kube-ipvs0 holds none of the Service's addresses"
	}
	return "kube-ipvs0 holds " + strings.Join(k.Addresses, ", ")
}
