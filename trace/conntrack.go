package trace

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// The conntrack layer: whether the node's connection tracking keeps the
// Service's flows: table use and insert failures, stale entries that outlive
// an endpoint, uneven spread of existing connections, the INVALID counter and
// the DNS insert race.

// invalidRateMatters says whether delta INVALID packets in a sample of
// intervalMillis (0: not known) are a rate worth reporting.
func invalidRateMatters(delta uint64, intervalMillis int) bool {
	if delta < invalidMinPackets {
		return false
	}
	return intervalMillis <= 0 || float64(delta)*1000/float64(intervalMillis) >= invalidMinPerSecond
}

// judgeConntrackFailModes judges the INVALID counter and the DNS insert race.
func (nj *nodeJudge) judgeConntrackFailModes(node string, obs *collectorapi.Observation, ct *collectorapi.ConntrackObservation) int {
	d := ct.StatsDelta
	if d == nil {
		return 0
	}
	interval := strconv.Itoa(ct.SampleIntervalMillis)
	problems := 0
	if invalidRateMatters(d.Invalid, ct.SampleIntervalMillis) {
		total := uint64(0)
		if ct.Stats != nil {
			total = ct.Stats.Invalid
		}
		mode, _ := programmed.Owner(obs)
		behaviour := invalidBehaviour(mode, ct.TCPBeLiberal)
		nj.EmitNode(report.CodeCTInvalid, node, report.Args{"delta": u64(d.Invalid), "interval": interval, "total": u64(total),
			"liberal": orUnknown(ct.TCPBeLiberal), "behaviour": behaviour}, nil,
			fieldValue("invalidDelta", u64(d.Invalid)), fieldValue("tcpBeLiberal", orUnknown(ct.TCPBeLiberal)), fieldValue("datapath", orUnknown(string(mode))))
		problems++
	}
	if f := ct.DNSFlows; d.InsertFailed > 0 && dnsRaceExplains(ct) {
		a := report.Args{"delta": u64(d.InsertFailed), "interval": interval, "dnsFlows": strconv.Itoa(f.Total), "dnsUnreplied": strconv.Itoa(f.Unreplied)}
		fields := []report.Field{fieldValue("insertFailedDelta", u64(d.InsertFailed)), fieldValue("clashResolve", clashResolve(ct)),
			fieldValue("dnsFlows", strconv.Itoa(f.Total)), fieldValue("dnsUnreplied", strconv.Itoa(f.Unreplied)), fieldItems("dnsDestinations", f.Destinations)}
		code := report.CodeCTDNSRace
		a["client"] = "clients on this node send, by default (glibc),"
		if p := nj.clientPod(); p != nil && p.Spec.NodeName == node {
			rc := resolverOf(p)
			fields = append(fields, fieldValue("dnsPolicy", rc.policy), fieldItems("dnsOptions", rc.options))
			if rc.mitigation != "" {
				code = report.CodeCTDNSRaceMitigated
				a["client"] = p.Namespace + "/" + p.Name
				a["mitigation"] = rc.mitigation
			} else {
				a["client"] = fmt.Sprintf("the client %s/%s (dnsPolicy %s, ndots %s: a name with fewer dots is tried in each search domain first, each try one more A/AAAA pair) sends", p.Namespace, p.Name, rc.policy, rc.ndots)
			}
		}
		nj.EmitNode(code, node, a, nil, fields...)
		// CT011 is not a problem for this client, but the node's
		// "no insert failures" line would contradict it.
		problems++
	}
	return problems
}

// dnsRaceExplains says whether the node's insert_failed is judged as the DNS
// insert race: the node holds UDP flows to the cluster DNS. The counter is
// node-wide, so one check carries it: CT010 or CT011 here, CT002 otherwise.
func dnsRaceExplains(ct *collectorapi.ConntrackObservation) bool {
	return ct.DNSFlows != nil && ct.DNSFlows.Total > 0
}

// clashResolve is the kernel's clash_resolve delta (clashes conntrack
// resolved instead of dropping the packet), "n/a" where it was not read.
func clashResolve(ct *collectorapi.ConntrackObservation) string {
	if v, ok := ct.ProcStatDelta["clash_resolve"]; ok {
		return strconv.FormatUint(v, 10)
	}
	return "n/a"
}

// invalidBehaviour is what kube-proxy v1.37 does with INVALID packets: the
// iptables proxier adds "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j
// DROP" unless nf_conntrack_tcp_be_liberal is non-zero when it starts; the
// nftables and IPVS proxiers program no such drop.
func invalidBehaviour(mode collectorapi.DatapathMode, liberal string) string {
	switch {
	case programmed.IsIPTables(mode) && liberal == "0":
		return "kube-proxy (iptables mode) drops INVALID packets in KUBE-FORWARD, so forwarded Service connections whose packets fall out of conntrack's TCP window stall or are reset; nf_conntrack_tcp_be_liberal=1 makes conntrack mark only out-of-window RSTs INVALID and kube-proxy then leaves the drop out"
	case programmed.IsIPTables(mode):
		return "kube-proxy (iptables mode) installs no INVALID drop with be_liberal set, so these packets pass untranslated: the peer may answer them with a reset"
	case mode == "":
		return "with kube-proxy in iptables mode and be_liberal 0 they are dropped in KUBE-FORWARD; untranslated otherwise, and the peer may reset the connection"
	case programmed.IsEBPF(mode):
		return string(mode) + "'s eBPF datapath, not kube-proxy, handles this Service, so kube-proxy's INVALID drop is not in its path; the counter still says packets fell out of conntrack's TCP window (resets, stalls on the node's own connections)"
	}
	return "kube-proxy in " + string(mode) + " mode programs no INVALID drop, so these packets pass untranslated and the peer may answer them with a reset"
}

type resolverConfig struct {
	policy     string
	ndots      string
	options    []string
	mitigation string
}

// resolverOf reads a Pod's resolver settings from its spec, as kubelet
// writes them into resolv.conf: dnsConfig.options are appended to the
// cluster's "options ndots:5".
func resolverOf(p *corev1.Pod) resolverConfig {
	rc := resolverConfig{policy: string(p.Spec.DNSPolicy), ndots: "5"}
	if rc.policy == "" {
		rc.policy = string(corev1.DNSClusterFirst)
	}
	if p.Spec.DNSPolicy == corev1.DNSDefault || (p.Spec.HostNetwork && p.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet) {
		rc.ndots = "from the node"
	}
	var mit []string
	if c := p.Spec.DNSConfig; c != nil {
		for _, o := range c.Options {
			s := o.Name
			if o.Value != nil {
				s += ":" + *o.Value
			}
			rc.options = append(rc.options, s)
			switch o.Name {
			case "ndots":
				if o.Value != nil {
					rc.ndots = *o.Value
				}
			case "single-request-reopen", "single-request", "use-vc":
				mit = append(mit, o.Name)
			}
		}
	}
	rc.mitigation = strings.Join(mit, ", ")
	return rc
}

func (nj *nodeJudge) clientPod() *corev1.Pod {
	if nj.from == nil {
		return nil
	}
	return nj.from.Pod
}

func (nj *nodeJudge) judgeConntrack(node string, obs *collectorapi.Observation) {
	s := obs.Sections.Conntrack
	if s == nil || s.Data == nil {
		msg := "section not collected"
		if s != nil && s.Error != "" {
			msg = s.Error
		}
		nj.EmitNode(report.CodeCTUnreadable, node, report.Args{"error": msg}, nil)
		return
	}
	ct := s.Data
	interval := strconv.Itoa(ct.SampleIntervalMillis)
	problems := 0
	if ct.StatsError != "" && ct.ProcStatError != "" {
		nj.EmitNode(report.CodeCTUnreadable, node, report.Args{"error": ct.StatsError}, nil)
		problems++
	}
	if d := ct.StatsDelta; d != nil {
		// Where the node's DNS flows explain insert_failed, the DNS race
		// checks (CT010/CT011) carry the counter alone.
		if d.InsertFailed > 0 && !dnsRaceExplains(ct) {
			clash := clashResolve(ct)
			total := uint64(0)
			if ct.Stats != nil {
				total = ct.Stats.InsertFailed
			}
			nj.EmitNode(report.CodeCTInsertFailed, node, report.Args{"delta": u64(d.InsertFailed), "interval": interval, "total": u64(total), "clash": clash}, nil,
				fieldValue("insertFailedDelta", u64(d.InsertFailed)))
			problems++
		}
		if d.Drop > 0 || d.EarlyDrop > 0 {
			nj.EmitNode(report.CodeCTDrops, node, report.Args{"delta": u64(d.Drop), "early": u64(d.EarlyDrop), "interval": interval}, nil,
				fieldValue("dropDelta", u64(d.Drop)), fieldValue("earlyDropDelta", u64(d.EarlyDrop)))
			problems++
		}
	}
	if ct.Max > 0 {
		pct := float64(ct.Count) * 100 / float64(ct.Max)
		if pct >= 80 {
			nj.EmitNode(report.CodeCTTableFull, node, report.Args{"percent": fmt.Sprintf("%.0f", pct), "count": i64(ct.Count), "max": i64(ct.Max)}, nil)
			problems++
		}
	}
	flows := 0
	if f := ct.Flows; f != nil {
		var gone, pinnedUDP []string
		goneCount, pinnedCount := 0, 0
		unNATed := map[string]bool{}
		for _, fe := range f.Frontends {
			flows += fe.Total
			frontend, _, _ := strings.Cut(fe.Frontend, "/")
			for _, b := range fe.Backends {
				switch {
				case b.Expected:
				case b.Backend == frontend:
					// The reply comes from the frontend itself: the flow was
					// never NATed (it was tried before kube-proxy programmed
					// the Service, or rejected). No backend pins it.
					unNATed[b.Backend] = true
					if strings.HasSuffix(fe.Frontend, "/UDP") && b.States["UNREPLIED"] > 0 {
						pinnedUDP = append(pinnedUDP, fmt.Sprintf("%s (%d flows)", fe.Frontend, b.States["UNREPLIED"]))
						pinnedCount += b.States["UNREPLIED"]
					}
				default:
					// A closed connection (TIME_WAIT, CLOSE) carries nothing
					// more: after a rollout, and after svctrace's own
					// probes, those linger to replaced Pods and hang nothing.
					live := b.Count - b.States["TIME_WAIT"] - b.States["CLOSE"]
					if live <= 0 {
						continue
					}
					gone = append(gone, fmt.Sprintf("%s (%d flows via %s)", b.Backend, live, fe.Frontend))
					goneCount += live
				}
			}
			nj.skew(node, fe, f.ExpectedBackends)
		}
		if goneCount > 0 {
			var raw []string
			for _, fl := range f.Unexpected {
				if !unNATed[fl.Backend] && fl.TCPState != "TIME_WAIT" && fl.TCPState != "CLOSE" {
					raw = append(raw, fmt.Sprintf("%s %s | reply %s %s", fl.Protocol, fl.Original, fl.Reply, fl.TCPState))
				}
			}
			nj.EmitNode(report.CodeCTStaleFlows, node, report.Args{"count": strconv.Itoa(goneCount), "backends": listNames(gone)}, raw,
				fieldItems("goneBackends", gone))
			problems++
		}
		// A UDP flow created while the Service had no rules (or no
		// endpoint) is never NATed, and every later datagram with the same
		// addresses and ports matches it and skips the nat table: the
		// client's packets go nowhere until the entry expires, which it
		// never does while the client keeps sending. kube-proxy deletes such
		// entries when a UDP Service gains endpoints (conntrack cleanup in
		// pkg/proxy/conntrack); one that survives is the blackhole.
		if len(pinnedUDP) > 0 && len(nj.endpointIndex().ready) > 0 {
			var raw []string
			for _, fl := range f.Unexpected {
				if strings.EqualFold(fl.Protocol, "udp") && unNATed[fl.Backend] {
					raw = append(raw, fmt.Sprintf("%s %s | reply %s %s", fl.Protocol, fl.Original, fl.Reply, strings.Join(fl.Status, ",")))
				}
			}
			nj.EmitNode(report.CodeCTUnNATedUDP, node, report.Args{"count": strconv.Itoa(pinnedCount), "frontends": listNames(pinnedUDP)}, raw,
				fieldItems("frontends", pinnedUDP))
			problems++
		}
	}
	problems += nj.judgeConntrackFailModes(node, obs, ct)
	if problems == 0 {
		nj.EmitNode(report.CodeCTHealthy, node, report.Args{"count": i64(ct.Count), "max": i64(ct.Max), "interval": interval, "flows": strconv.Itoa(flows)}, nil)
	}
}

// skew explains an uneven spread of existing connections: iptables and
// nftables balance new connections, so a few long-lived ones stay put.
func (nj *nodeJudge) skew(node string, fe collectorapi.FrontendFlows, expectedBackends []string) {
	var top *collectorapi.BackendFlows
	for i, b := range fe.Backends {
		if b.Expected && (top == nil || b.Count > top.Count) {
			top = &fe.Backends[i]
		}
	}
	if fe.Total < 10 || top == nil {
		return
	}
	// The backends this frontend can reach: the expected ones on the same
	// target port (a backend with no flow at all is absent from fe.Backends).
	_, port, _ := net.SplitHostPort(top.Backend)
	candidates := 0
	for _, b := range expectedBackends {
		if _, p, _ := net.SplitHostPort(b); p == port {
			candidates++
		}
	}
	if candidates < 2 {
		return
	}
	share := float64(top.Count) / float64(fe.Total)
	// Skewed: one backend holds well over its fair share (80% of two, 67%
	// of three, half or more of four and up).
	threshold := math.Max(0.5, math.Min(0.8, 2.0/float64(candidates)))
	if share > threshold {
		nj.EmitNode(report.CodeCTSkew, node, report.Args{"share": fmt.Sprintf("%.0f", share*100), "total": strconv.Itoa(fe.Total),
			"frontend": fe.Frontend, "backend": top.Backend}, nil)
	}
}

// The INVALID counter is node-wide and never quite still: a retransmitted
// FIN or a RST after the entry expired, or a probe's own closed connection,
// is INVALID on any node. Only a rate that can be the Service's connections
// failing is reported: at least invalidMinPackets in the sample and
// invalidMinPerSecond.
const (
	invalidMinPackets   = 10
	invalidMinPerSecond = 20
)
