package trace

import (
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/svctrace/kubectl-svctrace/trace/report"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// shareTolerance is how far, as a fraction of the fair share, an endpoint's
// share of new connections may be from 1/n. kube-proxy's iptables
// probabilities are rounded to 10 decimals (computeProbability) and again by
// the kernel (2^-31 steps), which puts shares up to about 1.4e-6 of the fair
// share off at 5,000 endpoints; nftables and IPVS shares are exact. 1% of
// the fair share leaves that far behind and still catches a doubled or a
// missing share at any size, which an absolute tolerance cannot once the
// fair share itself is below it.
const shareTolerance = 0.01

// programmedPort is one Service port as one datapath programmed it, in the
// same shape whichever datapath it came from, so that one comparison with
// the API serves iptables (either backend), nftables and IPVS alike.
type programmedPort struct {
	Datapath string // "iptables (nf_tables, IPv4)", "nftables (ip)", …
	Family   corev1.IPFamily
	PortName string
	Protocol string
	Port     int32
	NodePort int32

	// Captured: traffic to the ClusterIP:port is sent to an endpoint chain/map.
	Captured bool
	// InternalLocal: the ClusterIP goes to the Local (SVL / local-) chain.
	InternalLocal bool
	// Rejected / DroppedNoLocal: the no-endpoint verdicts for the ClusterIP.
	Rejected       bool
	DroppedNoLocal bool
	// Endpoints are the DNAT destinations the internal chain chooses from.
	Endpoints []programmedEndpoint
	// Unmatched is the share of new connections no rule selects.
	Unmatched float64
	// AffinitySeconds > 0 when session-affinity rules exist (-1: they
	// exist but carry no readable timeout).
	AffinitySeconds int
	// AffinityTimeouts are the distinct timeouts the affinity rules carry,
	// sorted: more than one means the rules disagree among themselves.
	AffinityTimeouts []int
	NodePortFound    bool
	// ExternalChain is the chain external traffic enters ("" when the
	// datapath has none); ExternalTo says where its unconditional last rule
	// sends that traffic (externalToCluster, externalToLocal, "" nowhere),
	// and ExternalEndpoints are the endpoints that chain chooses from.
	ExternalChain     string
	ExternalTo        string
	ExternalEndpoints []programmedEndpoint
	// externalRead says the reader looked for the external chain, so an
	// empty ExternalChain means it is absent.
	externalRead bool
	Evidence     []string
	// IPVS holds the IPVS-only details (fromIPVS); nil for other datapaths.
	IPVS *ipvsDetail
}

// Where an external chain sends traffic.
const (
	externalToCluster = "cluster"
	externalToLocal   = "local"
)

// addAffinityTimeout records one affinity rule's timeout; 0 is no affinity.
func (pp *programmedPort) addAffinityTimeout(seconds int) {
	if seconds <= 0 {
		return
	}
	if seconds > pp.AffinitySeconds {
		pp.AffinitySeconds = seconds
	}
	if i := sort.SearchInts(pp.AffinityTimeouts, seconds); i == len(pp.AffinityTimeouts) || pp.AffinityTimeouts[i] != seconds {
		pp.AffinityTimeouts = slices.Insert(pp.AffinityTimeouts, i, seconds)
	}
}

// evidenceOf is pp's evidence, none when the port was not programmed.
func evidenceOf(pp *programmedPort) []string {
	if pp == nil {
		return nil
	}
	return pp.Evidence
}

type programmedEndpoint struct {
	Endpoint string // ip:port the traffic is DNATed to
	Share    float64
}

// judgeDatapath decides which datapath owns the Service on this node, turns
// what it programmed into programmedPorts and compares each with kube-proxy's
// expectation for this node.
func (nj *nodeJudge) judgeDatapath(node string, obs *collectorapi.Observation) {
	svc := nj.in.Service
	zone, zoneKnown := nodeZone(nj.in, node)
	expect := ExpectForNode(svc, nj.in.Slices, node, map[string]string{corev1.LabelTopologyZone: zone})
	// Judging against an empty zone would expect every endpoint where
	// kube-proxy, knowing its zone, programs only that zone's; judging one
	// slice order would call kube-proxy's pick of a duplicate wrong.
	if nj.readOrders == nil {
		nj.readOrders = newReadOrders(nj.in.Slices)
	}
	choices := choicesForNode(svc, nj.readOrders, node, zone, zoneKnown)
	nj.proxyHealth(node, obs)

	mode, owner := datapathOwner(obs)
	switch mode {
	case collectorapi.ModeCilium, collectorapi.ModeCalico:
		nj.emit(report.CodeDPEBPFOwner, node, report.Args{"owner": owner, "detail": "the collector reads the eBPF maps instead"}, nil)
		nj.judgeCilium(node, obs, expect, choices)
		return
	}
	ports, leftovers, errs := programmedFromObservation(obs, mode)
	for _, e := range errs {
		nj.emit(report.CodeDPSectionError, node, report.Args{"section": e[0], "error": e[1]}, nil)
	}
	nj.emit(report.CodeDPOwner, node, report.Args{"owner": owner}, nil)
	if mode == collectorapi.ModeIPVS {
		// cmd/kube-proxy/app/server_linux.go logs this and records an
		// IPVSDeprecation Event at every start in IPVS mode.
		nj.emit(report.CodeDPIPVSDeprecated, node, nil, nil)
	}
	if mode == collectorapi.ModeIPVS {
		nj.judgeIPVSNode(node, obs)
	}
	for _, lo := range leftovers {
		nj.emit(report.CodeDPLeftovers, node, report.Args{"datapath": lo.active, "other": lo.other, "evidence": lo.evidence}, lo.raw)
	}
	if _, ignored := svc.Labels[labelServiceProxyName]; ignored {
		nj.emit(report.CodeDPIgnoredByProxy, node, nil, nil)
		return
	}
	if expect == nil {
		return
	}
	for i, pe := range expect {
		if !nj.portSelected(pe.PortName, pe.Port) {
			continue
		}
		pp := findProgrammed(ports, pe)
		if choices != nil {
			pe = choices.fit(i, pp)
		}
		nj.comparePort(node, obs, mode, pe, pp)
	}
}

// portSelected applies --port.
func (nj *nodeJudge) portSelected(name string, port int32) bool {
	p := nj.t.Metadata.Port
	return p == "" || p == name || p == strconv.Itoa(int(port))
}

func (nj *nodeJudge) comparePort(node string, obs *collectorapi.Observation, mode collectorapi.DatapathMode, pe PortExpectation, pp *programmedPort) {
	svc := nj.in.Service
	portName := servicePortLabel(nj.in.Namespace, nj.in.Name, pe)
	datapath := string(mode)
	if pp != nil {
		datapath = pp.Datapath
	}
	base := report.Args{"port": portName, "datapath": datapath}
	with := func(extra report.Args) report.Args {
		out := report.Args{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	want := pe.Internal
	if !pe.HasAnyEndpoints {
		if pp != nil && pp.Rejected {
			nj.emit(report.CodeDPRejectNoEndpoints, node, base, pp.Evidence)
		}
		return
	}
	if len(want) == 0 && !pe.InternalPolicyLocal {
		return
	}
	if len(want) == 0 && (pp == nil || len(pp.Endpoints) == 0) {
		// internalTrafficPolicy Local with no local endpoint: kube-proxy
		// drops ClusterIP traffic here (a filter-table DROP "has no local
		// endpoints" in iptables mode, the no-endpoint drop in nftables
		// mode; no real server in IPVS mode). Rules that still send it to
		// endpoints fall through to the comparison below as stale.
		how := "no endpoint is programmed for it on this node"
		if pp != nil && pp.DroppedNoLocal {
			how = "the drop rule for it is programmed"
		}
		nj.emit(report.CodeDPDroppedByDesign, node, with(report.Args{"how": how}), evidenceOf(pp))
		return
	}
	if pp == nil || (!pp.Captured && !pp.Rejected) {
		why := nj.noRulesReason(obs, mode)
		var raw []string
		if pp != nil {
			raw = pp.Evidence
		}
		nj.emit(report.CodeDPNoRules, node, with(report.Args{"why": why}), raw)
		return
	}
	if pp.Rejected {
		nj.emit(report.CodeDPRejectWithEPs, node, base, pp.Evidence)
		return
	}
	wantSet := map[string]bool{}
	wantByIP := map[string]string{}
	for _, e := range want {
		wantSet[e.String()] = true
		wantByIP[e.IP] = e.String()
	}
	gotSet := map[string]bool{}
	gotByIP := map[string]string{}
	for _, e := range pp.Endpoints {
		gotSet[e.Endpoint] = true
		if h, _, err := net.SplitHostPort(e.Endpoint); err == nil {
			gotByIP[h] = e.Endpoint
		}
	}
	var missing, stale []string
	problems := 0
	for ep := range wantSet {
		if gotSet[ep] {
			continue
		}
		h, _, _ := net.SplitHostPort(ep)
		if got, ok := gotByIP[h]; ok {
			nj.emit(report.CodeDPWrongDNATPort, node, with(report.Args{"got": got, "want": ep}), pp.Evidence)
			problems++
			continue
		}
		missing = append(missing, ep)
	}
	for ep := range gotSet {
		if wantSet[ep] {
			continue
		}
		h, _, _ := net.SplitHostPort(ep)
		if _, ok := wantByIP[h]; ok {
			continue // reported as a wrong port
		}
		stale = append(stale, ep)
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 {
		nj.emit(report.CodeDPMissingEndpoints, node, with(report.Args{"count": strconv.Itoa(len(missing)), "endpoints": listNames(missing)}), pp.Evidence,
			append([]report.Field{fieldItems("missing", missing), fieldItems("expected", endpointStrings(want))}, zoneFields(pe)...)...)
		problems++
	}
	if len(stale) > 0 {
		nj.emit(report.CodeDPStaleEndpoints, node, with(report.Args{"count": strconv.Itoa(len(stale)), "endpoints": listNames(stale)}), pp.Evidence,
			append([]report.Field{fieldItems("stale", stale), fieldItems("expected", endpointStrings(want))}, zoneFields(pe)...)...)
		problems++
	}
	if n := len(pp.Endpoints); n > 0 {
		fair := 1.0 / float64(n)
		tolerance := shareTolerance * fair
		var off []string
		for _, e := range pp.Endpoints {
			if math.Abs(e.Share-fair) > tolerance {
				off = append(off, fmt.Sprintf("%s %.4g%%", e.Endpoint, e.Share*100))
			}
		}
		if pp.Unmatched > tolerance {
			off = append(off, fmt.Sprintf("unmatched %.4g%%", pp.Unmatched*100))
		}
		if len(off) > 0 {
			shares := fmt.Sprintf("%s (fair share %.4g%% each of %d)", listNames(off), fair*100, n)
			nj.emit(report.CodeDPUnequalShares, node, with(report.Args{"shares": shares}), pp.Evidence,
				fieldItems("offShares", off), fieldValue("fairShare", fmt.Sprintf("%.6g", fair)))
			problems++
		}
	}
	affinity := svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP
	timeout := int(corev1.DefaultClientIPServiceAffinitySeconds)
	if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		timeout = int(*c.ClientIP.TimeoutSeconds)
	}
	switch {
	case affinity && pp.AffinitySeconds == 0:
		nj.emit(report.CodeDPAffinityMissing, node, with(report.Args{"timeout": strconv.Itoa(timeout)}), pp.Evidence)
		problems++
	case !affinity && pp.AffinitySeconds > 0:
		nj.emit(report.CodeDPAffinityExtra, node, with(report.Args{"detail": fmt.Sprintf("timeout %ds", pp.AffinitySeconds)}), pp.Evidence)
		problems++
	case affinity && len(pp.AffinityTimeouts) > 0:
		// kube-proxy writes the Service's timeoutSeconds into every
		// affinity rule (iptables recent --seconds, the nftables set
		// timeout, the IPVS persistence timeout).
		if len(pp.AffinityTimeouts) == 1 && pp.AffinityTimeouts[0] == timeout {
			nj.emit(report.CodeDPAffinityOK, node, with(report.Args{"timeout": strconv.Itoa(timeout)}), nil,
				fieldValue("programmedTimeoutSeconds", strconv.Itoa(timeout)))
			break
		}
		var got []string
		for _, s := range pp.AffinityTimeouts {
			got = append(got, strconv.Itoa(s))
		}
		nj.emit(report.CodeDPAffinityTimeout, node, with(report.Args{"programmed": strings.Join(got, "s, "), "timeout": strconv.Itoa(timeout)}), pp.Evidence,
			fieldItems("programmedTimeoutSeconds", got), fieldValue("serviceTimeoutSeconds", strconv.Itoa(timeout)))
		problems++
	}
	problems += nj.compareExternal(node, pe, pp, with)
	if mode == collectorapi.ModeIPVS {
		problems += nj.judgeIPVSPort(node, obs, pe, pp, with)
	}
	if pe.NodePort != 0 {
		if !pp.NodePortFound && len(pe.External) > 0 {
			nj.emit(report.CodeDPNodePortMissing, node, with(report.Args{"nodePort": strconv.Itoa(int(pe.NodePort))}), pp.Evidence)
			problems++
		}
		if pe.ExternalPolicyLocal && len(pe.External) == 0 {
			if mode == collectorapi.ModeIPVS {
				// IPVS does not drop: its NodePort virtual servers fall
				// back to the cluster endpoints (syncEndpoint, PR 97081).
				nj.emit(report.CodeDPIPVSETPLocalFallback, node, with(report.Args{"nodePort": strconv.Itoa(int(pe.NodePort))}), nil)
			} else {
				nj.emit(report.CodeDPETPLocalNoLocal, node, with(report.Args{"nodePort": strconv.Itoa(int(pe.NodePort))}), nil)
			}
		}
	}
	if problems == 0 {
		nj.emit(report.CodeDPRulesMatch, node, with(report.Args{"count": strconv.Itoa(len(want))}), pp.Evidence,
			append([]report.Field{fieldItems("endpoints", endpointStrings(want))}, zoneFields(pe)...)...)
	}
}

// compareExternal checks the path NodePort, externalIP and load-balancer
// traffic takes: kube-proxy sends it through an external chain to the
// cluster endpoints (externalTrafficPolicy Cluster) or to this node's own
// (Local). Where that is the chain the ClusterIP already uses, its
// endpoints were compared above. It returns the number of findings.
func (nj *nodeJudge) compareExternal(node string, pe PortExpectation, pp *programmedPort, with func(report.Args) report.Args) int {
	if !pe.ExternallyAccessible || !pe.HasAnyEndpoints || len(pe.External) == 0 || !pp.externalRead {
		return 0
	}
	wantTo, policy := externalToCluster, "Cluster"
	if pe.ExternalPolicyLocal {
		wantTo, policy = externalToLocal, "Local"
	}
	a := report.Args{"policy": policy, "chain": orNone(pp.ExternalChain)}
	switch {
	case pp.ExternalChain == "":
		nj.emit(report.CodeDPExternalMissing, node, with(a), pp.Evidence)
		return 1
	case pp.ExternalTo != wantTo:
		got := "no endpoint chain"
		if pp.ExternalTo != "" {
			got = "the " + pp.ExternalTo + " endpoints"
		}
		a["detail"] = "to " + got + ", but externalTrafficPolicy is " + policy
		nj.emit(report.CodeDPExternalWrong, node, with(a), pp.Evidence)
		return 1
	case wantTo == externalToCluster && pp.Captured && !pp.InternalLocal:
		return 0 // the same chain as the ClusterIP's, compared already
	}
	want := map[string]bool{}
	for _, e := range pe.External {
		want[e.String()] = true
	}
	got := map[string]bool{}
	for _, e := range pp.ExternalEndpoints {
		got[e.Endpoint] = true
	}
	var missing, stale []string
	for ep := range want {
		if !got[ep] {
			missing = append(missing, ep)
		}
	}
	for ep := range got {
		if !want[ep] {
			stale = append(stale, ep)
		}
	}
	if len(missing) == 0 && len(stale) == 0 {
		return 0
	}
	sort.Strings(missing)
	sort.Strings(stale)
	a["detail"] = fmt.Sprintf("to endpoints that differ from the EndpointSlices' %s ones (missing: %s; stale: %s)",
		strings.ToLower(policy), listOrNone(missing), listOrNone(stale))
	nj.emit(report.CodeDPExternalWrong, node, with(a), pp.Evidence,
		fieldItems("missing", missing), fieldItems("stale", stale), fieldItems("expected", endpointStrings(pe.External)))
	return 1
}

// zoneFields says which zone the topology hints were judged against when
// the node's zone was not known.
func zoneFields(pe PortExpectation) []report.Field {
	var out []report.Field
	if pe.ZoneAssumed {
		z := "none (no hint for the node's zone: hints ignored)"
		if pe.TopologyMode == corev1.ServiceTrafficDistributionPreferSameZone {
			z = pe.Zone
		}
		out = append(out, fieldValue("assumedZone", z+"; the node's zone is not readable, so the rules were matched against each hinted zone"))
	}
	if len(pe.OrderDependent) > 0 {
		out = append(out, fieldItems("duplicateEndpoints", pe.OrderDependent),
			fieldValue("duplicateNote", "these IP:ports are in several EndpointSlices with different conditions; kube-proxy keeps the copy of the slice it reads last (first for terminating copies), in no fixed order, so the rules were matched against each order"))
	}
	return out
}

func servicePortLabel(ns, name string, pe PortExpectation) string {
	spn := ns + "/" + name
	if pe.PortName != "" {
		spn += ":" + pe.PortName
	}
	s := fmt.Sprintf("%s (%d/%s", spn, pe.Port, pe.Protocol)
	if pe.Family == corev1.IPv6Protocol {
		s += ", IPv6"
	}
	return s + ")"
}

// noRulesReason explains an empty datapath with what the node told.
func (nj *nodeJudge) noRulesReason(obs *collectorapi.Observation, mode collectorapi.DatapathMode) string {
	if mode == collectorapi.ModeCilium || mode == collectorapi.ModeCalico {
		return "its load-balancer maps have no frontend for this ClusterIP and port (the agent has not synced the Service, or does not manage it)"
	}
	var why []string
	if p := obs.Sections.Proxy; p != nil && p.Data != nil && p.Data.Mode == "" {
		why = append(why, "kube-proxy does not answer on its metrics port (stopped or crashed?)")
	}
	if mode == "" {
		why = append(why, "no kube-proxy datapath found on the node at all")
	}
	if len(why) == 0 {
		why = append(why, "kube-proxy has not programmed this Service (not synced since it was created or changed, or its rules were removed)")
	}
	return strings.Join(why, "; ")
}

// proxyHealth judges kube-proxy's own signals.
func (nj *nodeJudge) proxyHealth(node string, obs *collectorapi.Observation) {
	s := obs.Sections.Proxy
	if s == nil || s.Data == nil {
		return
	}
	p := s.Data
	if p.Mode == "" {
		if owner, _ := datapathOwner(obs); owner == collectorapi.ModeCilium || owner == collectorapi.ModeCalico {
			return // no kube-proxy expected
		}
		nj.emit(report.CodeDPProxyUnreachable, node, report.Args{"address": p.ProxyMode.URL, "error": orNone(p.ProxyMode.Error)}, nil)
		return
	}
	if h := p.Healthz; h != nil && h.Healthy != nil && !*h.Healthy {
		nj.emit(report.CodeDPProxyUnhealthy, node, report.Args{"lastUpdated": orNone(h.LastUpdated), "currentTime": orNone(h.CurrentTime)}, []string{h.Fetch.Body})
	}
	if m := p.Metrics; m != nil {
		var last, queued float64
		for _, smp := range m.Samples {
			switch smp.Name {
			case "kubeproxy_sync_proxy_rules_last_timestamp_seconds":
				last = smp.Value
			case "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds":
				queued = smp.Value
			}
		}
		now := float64(obs.CollectedAt.Unix())
		// A change queued more than a minute before the last sync means
		// kube-proxy is failing to apply it.
		if queued > 0 && last > 0 && queued > last && now-queued > 60 {
			nj.emit(report.CodeDPProxyStaleSync, node, report.Args{"age": (time.Duration(now-last) * time.Second).String(),
				"queuedAge": (time.Duration(now-queued) * time.Second).String()}, nil)
		}
	}
}

// datapathOwner names the datapath that should hold the Service on the node:
// kube-proxy's own /proxyMode first, else the fingerprints.
func datapathOwner(obs *collectorapi.Observation) (mode collectorapi.DatapathMode, description string) {
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

type leftover struct {
	active, other, evidence string
	raw                     []string
}

// programmedFromObservation reads the iptables/nftables/IPVS sections and
// returns the active datapath's ports, leftovers of others, and section errors.
func programmedFromObservation(obs *collectorapi.Observation, mode collectorapi.DatapathMode) ([]programmedPort, []leftover, [][2]string) {
	var errs [][2]string
	var ipt *collectorapi.IPTablesObservation
	if s := obs.Sections.IPTables; s != nil {
		ipt = s.Data
		if s.Error != "" && (mode == collectorapi.ModeIPTables || mode == "") {
			errs = append(errs, [2]string{collectorapi.SectionIPTables, s.Error})
		}
	}
	var nft *collectorapi.NFTablesObservation
	if s := obs.Sections.NFTables; s != nil {
		nft = s.Data
		if s.Error != "" && (mode == collectorapi.ModeNFTables || mode == "") {
			errs = append(errs, [2]string{collectorapi.SectionNFTables, s.Error})
		}
	}

	// Every kube-proxy-bearing iptables backend is a candidate.
	var iptBackends []iptBackendPorts
	if ipt != nil {
		for _, b := range ipt.Backends {
			if b.KubeProxyChains {
				iptBackends = append(iptBackends, iptBackendPorts{b, fromIPTables(b)})
			}
		}
	}
	var nftPorts []programmedPort
	nftPresent := false
	if nft != nil {
		for _, t := range nft.Tables {
			if t.Present {
				nftPresent = true
				nftPorts = append(nftPorts, fromNFTables(nft.Source, t)...)
			}
		}
	}

	var active []programmedPort
	var lo []leftover
	switch mode {
	case collectorapi.ModeNFTables:
		active = nftPorts
		for _, b := range iptBackends {
			lo = append(lo, leftover{active: string(collectorapi.ModeNFTables), other: "iptables (" + b.obs.Backend + ")",
				evidence: "nat KUBE-SERVICES exists", raw: b.obs.Commands})
		}
	case collectorapi.ModeIPTables, "":
		best := -1
		for i, b := range iptBackends {
			// kube-proxy keeps its canary in the backend it writes; with
			// several backends, the one capturing the Service the most is
			// live and the rest are leftovers.
			if best < 0 || captureScore(b.ports) > captureScore(iptBackends[best].ports) {
				best = i
			}
		}
		if best >= 0 {
			active = iptBackends[best].ports
			for i, b := range iptBackends {
				if i != best {
					lo = append(lo, leftover{active: "iptables (" + iptBackends[best].obs.Backend + ")", other: "iptables (" + b.obs.Backend + ")",
						evidence: "nat KUBE-SERVICES exists in both backends", raw: b.obs.Commands})
				}
			}
		}
		if mode == collectorapi.ModeIPTables && nftPresent {
			lo = append(lo, leftover{active: string(collectorapi.ModeIPTables), other: string(collectorapi.ModeNFTables), evidence: "table kube-proxy exists"})
		}
		if mode == "" && len(active) == 0 {
			active = nftPorts
		}
	case collectorapi.ModeIPVS:
		active = fromIPVS(obs)
	}
	return active, lo, errs
}

type iptBackendPorts struct {
	obs   collectorapi.IPTablesBackendObservation
	ports []programmedPort
}

func captureScore(ports []programmedPort) int {
	n := 0
	for _, p := range ports {
		if p.Captured {
			n += 1 + len(p.Endpoints)
		}
	}
	return n
}

func findProgrammed(ports []programmedPort, pe PortExpectation) *programmedPort {
	for i := range ports {
		p := &ports[i]
		if p.PortName == pe.PortName && strings.EqualFold(p.Protocol, pe.Protocol) && p.Port == pe.Port &&
			(p.Family == pe.Family || p.Family == "") {
			return p
		}
	}
	return nil
}

// portNameOf extracts the port name from a ServicePortName "ns/name:port".
func portNameOf(spn string) string {
	if i := strings.LastIndex(spn, ":"); i >= 0 && !strings.Contains(spn[i:], "/") {
		return spn[i+1:]
	}
	return ""
}

func familyOf(s string) corev1.IPFamily {
	switch strings.ToLower(s) {
	case "ipv6", "ip6":
		return corev1.IPv6Protocol
	case "ipv4", "ip":
		return corev1.IPv4Protocol
	}
	return ""
}

func fromIPTables(b collectorapi.IPTablesBackendObservation) []programmedPort {
	var out []programmedPort
	for _, p := range b.Ports {
		pp := programmedPort{
			Datapath: fmt.Sprintf("iptables (%s, %s)", b.Backend, b.Family),
			Family:   familyOf(b.Family),
			PortName: portNameOf(p.ServicePortName), Protocol: strings.ToUpper(p.Protocol), Port: p.Port, NodePort: p.NodePort,
			NodePortFound: len(p.NodePorts) > 0,
		}
		var internal *collectorapi.IPTablesChain
		for _, e := range p.Entry {
			pp.Evidence = append(pp.Evidence, e.Raw)
			if e.Kind != "clusterIP" {
				continue
			}
			target := e.Target()
			for _, c := range []*collectorapi.IPTablesChain{p.Service, p.Local} {
				if c != nil && c.Name == target && c.Exists {
					internal = c
					pp.Captured = true
					pp.InternalLocal = c == p.Local
				}
			}
		}
		for _, r := range p.NodePorts {
			pp.Evidence = append(pp.Evidence, r.Raw)
		}
		for _, r := range p.Filter {
			pp.Evidence = append(pp.Evidence, r.Raw)
			switch {
			case strings.Contains(r.Comment, "has no endpoints") && r.Jump == "REJECT":
				pp.Rejected = true
			case strings.Contains(r.Comment, "has no local endpoints") && r.Jump == "DROP" && !r.NotDstType && r.DstType == "":
				pp.DroppedNoLocal = true
			}
		}
		if internal != nil {
			for _, r := range internal.Rules {
				pp.Evidence = append(pp.Evidence, r.Raw)
			}
			dnat := map[string]string{}
			for _, ec := range p.Endpoints {
				for _, r := range ec.Rules {
					pp.Evidence = append(pp.Evidence, r.Raw)
				}
				if ec.DNAT != "" {
					dnat[ec.Name] = ec.DNAT
				}
			}
			pp.Endpoints = iptSelection(internal, dnat)
			pp.Unmatched = internal.UnmatchedShare
			for _, a := range internal.Affinity {
				pp.addAffinityTimeout(a.Seconds)
			}
		}
		// External traffic (NodePort, externalIPs, load-balancer IPs) enters
		// KUBE-EXT-…, whose last, unconditional rule sends it to KUBE-SVC-…
		// (Cluster) or KUBE-SVL-… (Local); the rules before it short-circuit
		// Pod and node-local sources to the cluster chain
		// (pkg/proxy/iptables/proxier.go). With Local and no local endpoint
		// that last rule is absent.
		pp.externalRead = p.External != nil
		if ext := p.External; ext != nil && ext.Exists {
			pp.ExternalChain = ext.Name
			dnat := map[string]string{}
			for _, ec := range p.Endpoints {
				if ec.DNAT != "" {
					dnat[ec.Name] = ec.DNAT
				}
			}
			for _, r := range ext.Rules {
				pp.Evidence = append(pp.Evidence, r.Raw)
				if r.Source != "" || r.SrcType != "" {
					continue
				}
				to := r.Jump
				if to == "" {
					to = r.Goto
				}
				for _, c := range []struct {
					chain *collectorapi.IPTablesChain
					kind  string
				}{{p.Service, externalToCluster}, {p.Local, externalToLocal}} {
					if c.chain != nil && c.chain.Exists && c.chain.Name == to {
						pp.ExternalTo = c.kind
						pp.ExternalEndpoints = iptSelection(c.chain, dnat)
					}
				}
			}
		}
		out = append(out, pp)
	}
	return out
}

// iptSelection is the endpoints a KUBE-SVC/SVL chain chooses from, with their
// shares; dnat maps KUBE-SEP chains to their DNAT destinations.
func iptSelection(c *collectorapi.IPTablesChain, dnat map[string]string) []programmedEndpoint {
	var out []programmedEndpoint
	for _, s := range c.Selection {
		ep := dnat[s.Target]
		if ep == "" {
			ep = s.Endpoint
		}
		out = append(out, programmedEndpoint{Endpoint: ep, Share: s.Share})
	}
	return out
}

func fromNFTables(source string, t collectorapi.NFTablesTableObservation) []programmedPort {
	var out []programmedPort
	for _, p := range t.Ports {
		pp := programmedPort{
			Datapath: fmt.Sprintf("nftables (%s %s, via %s)", t.Family, t.Name, source),
			Family:   familyOf(t.Family),
			PortName: portNameOf(p.ServicePortName), Protocol: strings.ToUpper(p.Protocol), Port: p.Port, NodePort: p.NodePort,
		}
		chains := map[string]*collectorapi.NFTablesChain{}
		for _, c := range append([]*collectorapi.NFTablesChain{p.Service, p.Local, p.External, p.Firewall}, append(p.Other, p.Endpoints...)...) {
			if c != nil && c.Exists {
				chains[c.Name] = c
			}
		}
		var internal *collectorapi.NFTablesChain
		for _, e := range p.ServiceIPs {
			if !e.Found {
				continue
			}
			pp.Evidence = append(pp.Evidence, fmt.Sprintf("map %s: %s : %s", e.Map, e.Key, e.Verdict))
			if c := chains[e.Target]; c != nil && (c == p.Service || c == p.Local) && internal == nil {
				internal = c
				pp.Captured = true
				pp.InternalLocal = c == p.Local
			}
		}
		for _, e := range p.ServiceNodePorts {
			if e.Found {
				pp.NodePortFound = true
				pp.Evidence = append(pp.Evidence, fmt.Sprintf("map %s: %s : %s", e.Map, e.Key, e.Verdict))
			}
		}
		for _, e := range p.NoEndpointServices {
			if !e.Found {
				continue
			}
			pp.Evidence = append(pp.Evidence, fmt.Sprintf("map %s: %s : %s", e.Map, e.Key, e.Verdict))
			if strings.Contains(e.Verdict, "reject") {
				pp.Rejected = true
			} else if strings.Contains(e.Verdict, "drop") {
				pp.DroppedNoLocal = true
			}
		}
		if internal != nil {
			pp.Endpoints = nftChainEndpoints(internal, chains, p, &pp)
		}
		// The external- chain ends in "goto service-…" (Cluster) or
		// "goto local-…" (Local); the rules before it short-circuit Pod
		// sources ("ip saddr …") and local sources ("fib saddr type local")
		// to the service chain (pkg/proxy/nftables/proxier.go).
		pp.externalRead = p.External != nil
		if ext := p.External; ext != nil && ext.Exists {
			pp.ExternalChain = ext.Name
			for _, r := range ext.Rules {
				pp.Evidence = append(pp.Evidence, "chain "+ext.Name+": "+r.Text)
				if r.SourceMatch != "" || strings.Contains(r.Text, "saddr") || r.Target == "" {
					continue
				}
				for _, c := range []struct {
					chain *collectorapi.NFTablesChain
					kind  string
				}{{p.Service, externalToCluster}, {p.Local, externalToLocal}} {
					if c.chain != nil && c.chain.Exists && c.chain.Name == r.Target {
						pp.ExternalTo = c.kind
						pp.ExternalEndpoints = nftChainEndpoints(c.chain, chains, p, &programmedPort{})
					}
				}
			}
		}
		out = append(out, pp)
	}
	return out
}

// nftChainEndpoints is the endpoints an nftables service- or local- chain
// sends new connections to, with their shares; its rules and affinity sets
// are recorded into pp.
func nftChainEndpoints(c *collectorapi.NFTablesChain, chains map[string]*collectorapi.NFTablesChain, p collectorapi.NFTablesPortObservation, pp *programmedPort) []programmedEndpoint {
	var eps []programmedEndpoint
	for _, r := range c.Rules {
		pp.Evidence = append(pp.Evidence, "chain "+c.Name+": "+r.Text)
		if r.AffinityMatch != "" {
			readable := false
			for _, a := range p.Affinity {
				if a.Name == r.AffinityMatch && a.TimeoutSeconds > 0 {
					pp.addAffinityTimeout(int(a.TimeoutSeconds))
					readable = true
				}
			}
			if !readable && pp.AffinitySeconds == 0 {
				pp.AffinitySeconds = -1 // rules without a readable timeout
			}
		}
		if r.Numgen == nil {
			continue
		}
		pp.Unmatched = r.Numgen.UnmatchedShare
		for _, en := range r.Numgen.Entries {
			ep := en.Address
			if ep == "" {
				if c := chains[en.Target]; c != nil {
					for _, er := range c.Rules {
						pp.Evidence = append(pp.Evidence, "chain "+c.Name+": "+er.Text)
						if er.DNAT != "" {
							ep = er.DNAT
						}
						if er.Update != "" {
							for _, a := range p.Affinity {
								if a.Name == er.Update && a.TimeoutSeconds > 0 {
									pp.addAffinityTimeout(int(a.TimeoutSeconds))
								}
							}
						}
					}
				}
			}
			if ep == "" {
				ep = en.Target
			}
			eps = append(eps, programmedEndpoint{Endpoint: ep, Share: en.Share})
		}
	}
	if eps == nil {
		// A single endpoint: kube-proxy jumps straight to it.
		for _, r := range c.Rules {
			if r.DNAT != "" {
				eps = append(eps, programmedEndpoint{Endpoint: r.DNAT, Share: 1})
			} else if c := chains[r.Target]; c != nil && r.Target != "" && strings.HasPrefix(r.Target, "endpoint-") {
				for _, er := range c.Rules {
					if er.DNAT != "" {
						eps = append(eps, programmedEndpoint{Endpoint: er.DNAT, Share: 1})
					}
				}
			}
		}
	}
	return eps
}

// fromIPVS reads the IPVS section as kube-proxy's IPVS proxier programs it:
// one virtual server per ClusterIP:port (the internal path), one per
// externalIP, load-balancer IP and node IP × NodePort (the external paths),
// each with the same real servers. Real servers of weight 0 are draining
// (graceful termination): they keep their connections but get no new ones.
// The scheduler decides the shares: rr and the hashing schedulers (sh, mh)
// spread new connections evenly over the live real servers, the weighted
// ones (wrr, wlc…) by weight; lc/wlc/sed/nq follow current load and are
// judged as even.
func fromIPVS(obs *collectorapi.Observation) []programmedPort {
	s := obs.Sections.IPVS
	if s == nil || s.Data == nil || !s.Data.Available {
		return nil
	}
	type key struct {
		name, proto string
		fam         corev1.IPFamily
	}
	byPort := map[key]*programmedPort{}
	var order []key
	nodePorts := map[key]bool{}
	all := map[key][]collectorapi.IPVSVirtualServer{}
	for _, vs := range s.Data.VirtualServers {
		k := key{vs.PortName, strings.ToUpper(vs.Protocol), ipFamily(vs.Address)}
		all[k] = append(all[k], vs)
		if vs.Frontend == "nodePort" {
			if vs.Found {
				nodePorts[k] = true
			}
			continue
		}
		if vs.Frontend != "clusterIP" {
			continue
		}
		pp := programmedPort{Datapath: "ipvs (" + vs.Scheduler + ")", PortName: vs.PortName, Protocol: k.proto,
			Port: int32(vs.Port), Family: k.fam, Captured: vs.Found}
		pp.addAffinityTimeout(int(vs.TimeoutSeconds))
		var live []collectorapi.IPVSRealServer
		total := 0
		for _, rs := range vs.RealServers {
			pp.Evidence = append(pp.Evidence, fmt.Sprintf("-> %s:%d weight %d active %d inactive %d", rs.Address, rs.Port, rs.Weight, rs.ActiveConns, rs.InactiveConns))
			if rs.Weight > 0 {
				live = append(live, rs)
				total += int(rs.Weight)
			}
		}
		weighted := strings.HasPrefix(vs.Scheduler, "w")
		for _, rs := range live {
			share := 1 / float64(len(live))
			if weighted && total > 0 {
				share = float64(rs.Weight) / float64(total)
			}
			pp.Endpoints = append(pp.Endpoints, programmedEndpoint{Endpoint: net.JoinHostPort(rs.Address, strconv.Itoa(int(rs.Port))), Share: share})
		}
		if _, dup := byPort[k]; !dup {
			order = append(order, k)
		}
		byPort[k] = &pp
	}
	out := make([]programmedPort, 0, len(order))
	for _, k := range order {
		pp := byPort[k]
		pp.NodePortFound = nodePorts[k]
		pp.IPVS = &ipvsDetail{VirtualServers: all[k]}
		out = append(out, *pp)
	}
	return out
}

// ipFamily is the family of an address string, IPv4 when it does not parse.
func ipFamily(addr string) corev1.IPFamily {
	if ip := net.ParseIP(addr); ip != nil && ip.To4() == nil {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// judgeCilium compares Cilium's backends for each ClusterIP frontend with the
// expected endpoints, as kube-proxy's are compared. A frontend is one
// (address family, protocol, port) key: kube-dns's 53/UDP and 53/TCP, or a
// dual-stack Service's IPv4 and IPv6 ClusterIPs, are separate frontends with
// separate backends. Of the two lookup scopes Cilium keeps for Services with
// a Local traffic policy, the ClusterIP path uses the external one (scope
// 0) unless only the internal one exists. Maps the collector could not
// decode (another Cilium version's layout, no permission) leave the port
// unknown, not failed: kube-proxy's reasons do not apply here.
func (nj *nodeJudge) judgeCilium(node string, obs *collectorapi.Observation, expect []PortExpectation, choices *expectationChoices) {
	e := obs.Sections.EBPF
	if e == nil || e.Data == nil || e.Data.Cilium == nil {
		return
	}
	c := e.Data.Cilium
	if c.Error != "" {
		ck := nj.emit(report.CodeDPEBPFUnreadable, node, report.Args{"datapath": "Cilium", "error": c.Error}, nil,
			fieldValue("layout", c.LayoutNote))
		ck.Status = report.StatusUnknown
	}
	for i, pe := range expect {
		if !nj.portSelected(pe.PortName, pe.Port) || !pe.HasAnyEndpoints || len(pe.Internal) == 0 {
			continue
		}
		fe := ciliumFrontend(c.Frontends, "clusterIP", pe.Family, pe.Protocol, uint16(pe.Port))
		if fe == nil {
			// The frontend was not read (its map could not be opened or
			// decoded): already said, and no verdict on it.
			continue
		}
		pp := &programmedPort{Datapath: "cilium", PortName: pe.PortName, Protocol: pe.Protocol, Port: pe.Port, Family: pe.Family}
		if fe.Found {
			pp.Captured = true
			pp.addAffinityTimeout(int(fe.AffinityTimeoutSecs))
			pp.Datapath = "cilium (" + ciliumLBAlgorithm(fe.LBAlgorithm) + ")"
			var active []collectorapi.CiliumBackend
			for _, b := range fe.Backends {
				pp.Evidence = append(pp.Evidence, fmt.Sprintf("%s:%d/%s scope %d slot %d -> backend %d %s:%d %s", fe.Address, fe.Port, fe.Protocol, fe.Scope, b.Slot, b.BackendID, b.Address, b.Port, b.State))
				if b.Found && (b.State == "" || b.State == "active") {
					active = append(active, b)
				}
			}
			for _, b := range active {
				pp.Endpoints = append(pp.Endpoints, programmedEndpoint{Endpoint: net.JoinHostPort(b.Address, strconv.Itoa(int(b.Port))), Share: 1 / float64(len(active))})
			}
		}
		if pe.NodePort != 0 {
			if np := ciliumFrontend(c.Frontends, "nodePort", pe.Family, pe.Protocol, uint16(pe.NodePort)); np != nil && np.Found {
				pp.NodePortFound = true
			} else if np == nil {
				// Not read: do not claim it is missing.
				pp.NodePortFound = true
			}
		}
		if choices != nil {
			pe = choices.fit(i, pp)
		}
		nj.comparePort(node, obs, collectorapi.ModeCilium, pe, pp)
	}
}

// ciliumFrontend finds the frontend of one kind, family, protocol and port,
// the external scope first; nil when the collector did not read it.
// Protocol-less keys (older Cilium, protocol ANY) match any protocol.
func ciliumFrontend(fes []collectorapi.CiliumFrontend, kind string, fam corev1.IPFamily, proto string, port uint16) *collectorapi.CiliumFrontend {
	var best *collectorapi.CiliumFrontend
	for i := range fes {
		fe := &fes[i]
		if fe.Frontend != kind || fe.Port != port || ipFamily(fe.Address) != fam {
			continue
		}
		if !strings.EqualFold(fe.Protocol, proto) && fe.Protocol != "" && !strings.EqualFold(fe.Protocol, "ANY") {
			continue
		}
		switch {
		case best == nil:
			best = fe
		case fe.Found && !best.Found:
			best = fe
		case fe.Found == best.Found && fe.Scope < best.Scope:
			best = fe
		}
	}
	return best
}

// ciliumLBAlgorithm names the value Cilium keeps in slot 0 for the
// Service's load-balancing algorithm (loadbalancer.SVCLoadBalancingAlgorithm:
// 0 undefined = the agent's default, 1 random, 2 maglev).
func ciliumLBAlgorithm(a uint8) string {
	switch a {
	case 1:
		return "random"
	case 2:
		return "maglev"
	}
	return "default algorithm"
}
