package trace

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Masquerading is judged in the datapath layer: it is kube-proxy's rules
// (KUBE-MARK-MASQ, KUBE-POSTROUTING) that decide whether a reply finds its
// way back through the node that translated the request.

// judgeMasquerade checks what kube-proxy v1.37 programs for masquerading
// (pkg/proxy/iptables and nftables proxier.go): the KUBE-MARK-MASQ chain
// that sets the mark KUBE-POSTROUTING masquerades, and, for externally
// reachable ports, the external chain's mark rule under
// externalTrafficPolicy Cluster ("masquerade traffic for … external
// destinations"; nftables: comment "masquerade") or its absence under Local.
func (nj *nodeJudge) judgeMasquerade(node string, obs *collectorapi.Observation) {
	svc := nj.in.Service
	if svc == nil {
		return
	}
	local := svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	if s := obs.Sections.IPTables; s != nil && s.Data != nil {
		live := programmed.LiveIPTablesBackends(s.Data.Backends)
		for i, b := range s.Data.Backends {
			if !b.KubeProxyChains {
				continue
			}
			dp := fmt.Sprintf("iptables (%s, %s)", b.Backend, b.Family)
			users := markMasqUsers(b)
			if len(users) > 0 && !slices.ContainsFunc(b.MarkMasq, func(r collectorapi.IPTablesRule) bool { return r.Mark != "" }) {
				detail := "nat KUBE-MARK-MASQ sets no mark, though " + listNames(users) + " jump to it"
				nj.EmitNode(report.CodeDPMasqMissing, node, report.Args{"datapath": dp, "detail": detail}, ruleTexts(b.MarkMasq),
					fieldItems("markMasq", ruleTexts(b.MarkMasq)), fieldItems("jumpedFrom", users))
			} else if len(users) > 0 && b.Postrouting != nil && live[i] {
				nj.judgeIPTablesPostrouting(node, dp, b, users)
			}
			for _, p := range b.Ports {
				if p.External == nil || !p.External.Exists {
					continue
				}
				port := masqPortLabel(p.ServicePortName, p.Protocol)
				var mark *collectorapi.IPTablesRule
				for i, r := range p.External.Rules {
					if r.Jump == "KUBE-MARK-MASQ" && r.SrcType == "" {
						mark = &p.External.Rules[i]
						break
					}
				}
				nj.emitExternalMasq(node, dp, port, p.External.Name, programmed.FamilyOf(b.Family), local, mark != nil, func() string { return mark.Raw })
			}
		}
	}
	if s := obs.Sections.NFTables; s != nil && s.Data != nil {
		for _, t := range s.Data.Tables {
			dp := "nftables (" + t.Family + ")"
			if t.Present {
				nj.judgeNFTablesMasquerading(node, dp, t)
			}
			for _, p := range t.Ports {
				if p.External == nil || !p.External.Exists {
					continue
				}
				var mark *collectorapi.NFTablesRule
				for i, r := range p.External.Rules {
					if r.Mark != "" && r.Comment == "masquerade" {
						mark = &p.External.Rules[i]
						break
					}
				}
				nj.emitExternalMasq(node, dp, masqPortLabel(p.ServicePortName, p.Protocol), p.External.Name, programmed.FamilyOf(t.Family), local, mark != nil, func() string { return mark.Text })
			}
		}
	}
}

// judgeIPTablesPostrouting follows a packet KUBE-MARK-MASQ marked through
// nat POSTROUTING's jump and KUBE-POSTROUTING (pkg/proxy/iptables/
// proxier.go v1.37.2: "-m mark ! --mark M/M -j RETURN", "-j MARK
// --xor-mark M", "-j MASQUERADE --random-fully"): the chain must be reached
// and masquerade it before anything returns it. Rules that match on more
// than the mark may not apply to every such packet and are passed over.
func (nj *nodeJudge) judgeIPTablesPostrouting(node, dp string, b collectorapi.IPTablesBackendObservation, users []string) {
	mark, ok := markValue(b.MasqMark)
	if !ok {
		return
	}
	pr := b.Postrouting
	a := report.Args{"datapath": dp, "mark": b.MasqMark}
	evidence := append(ruleTexts(pr.Jumps), ruleTexts(pr.Rules)...)
	fields := []report.Field{fieldItems("postrouting", ruleTexts(pr.Jumps)), fieldItems("kubePostrouting", ruleTexts(pr.Rules)), fieldItems("markedBy", users)}
	if detail := postroutingGap(pr.Exists, pr.Rules, mark); detail != "" {
		a["detail"] = detail
		nj.EmitNode(report.CodeDPMasqNoRule, node, a, evidence, fields...)
		return
	}
	if len(pr.Jumps) == 0 {
		a["detail"] = "nat POSTROUTING does not jump to KUBE-POSTROUTING"
		nj.EmitNode(report.CodeDPMasqNoJump, node, a, evidence, fields...)
	}
}

// postroutingGap walks KUBE-POSTROUTING with a packet whose mark is mark
// and says why it is not masqueraded, "" when it is.
func postroutingGap(exists bool, rules []collectorapi.IPTablesRule, mark uint32) string {
	if !exists {
		return "nat KUBE-POSTROUTING does not exist"
	}
	pm := mark
	for _, r := range rules {
		matched, decided := iptMarkConditions(r, pm)
		if !decided || !matched {
			continue
		}
		switch r.Target() {
		case "MASQUERADE", "SNAT":
			return ""
		case "RETURN", "ACCEPT", "DROP":
			return fmt.Sprintf("nat KUBE-POSTROUTING ends marked packets with %q before any MASQUERADE rule", r.Raw)
		case "MARK":
			if v, m, ok := markPair(optionArg(r, "--set-xmark")); ok {
				pm = (pm &^ m) ^ v
			}
		}
	}
	return fmt.Sprintf("nat KUBE-POSTROUTING has no MASQUERADE rule for packets marked 0x%x", mark)
}

// iptMarkConditions evaluates a rule's matches for a packet whose mark is
// pm: decided is false when the rule matches on anything but the mark
// (comments aside).
func iptMarkConditions(r collectorapi.IPTablesRule, pm uint32) (matched, decided bool) {
	matched = true
	for _, o := range r.Options {
		switch o.Name {
		case "-j", "-g":
			return matched, true
		case "-m", "--comment":
		case "--mark":
			v, m, ok := markPair(firstArg(o.Args))
			if !ok {
				return false, false
			}
			if (pm&m == v) == o.Negated {
				matched = false
			}
		default:
			return false, false
		}
	}
	return matched, true
}

// markValue is the mark KUBE-MARK-MASQ's "MARK --set-xmark V/M" gives a
// packet whose mark was 0: (0 & ^M) ^ V, that is V.
func markValue(s string) (uint32, bool) {
	v, _, ok := markPair(s)
	return v, ok
}

// markPair parses "0x4000/0x4000" or "0x4000" (mask all ones).
func markPair(s string) (value, mask uint32, ok bool) {
	vs, ms, hasMask := strings.Cut(s, "/")
	v, err := strconv.ParseUint(vs, 0, 32)
	if err != nil {
		return 0, 0, false
	}
	mask = 0xffffffff
	if hasMask {
		m, err := strconv.ParseUint(ms, 0, 32)
		if err != nil {
			return 0, 0, false
		}
		mask = uint32(m)
	}
	return uint32(v), mask, true
}

func optionArg(r collectorapi.IPTablesRule, name string) string {
	for _, o := range r.Options {
		if o.Name == name {
			return firstArg(o.Args)
		}
	}
	return ""
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// judgeNFTablesMasquerading follows a marked packet through kube-proxy's
// nftables masquerade path (pkg/proxy/nftables/proxier.go v1.37.2: chain
// masquerading, "meta mark & M != 0 meta mark set meta mark ^ M masquerade
// fully-random", jumped to from the nat-postrouting base chain). Every
// Service depends on it: the shared services chain marks cluster IP
// traffic from outside the cluster, external chains mark what they send
// elsewhere. The mark is the one the Service's own rules set, else the one
// chain masquerading tests, else kube-proxy's default (--masquerade-bit 14).
func (nj *nodeJudge) judgeNFTablesMasquerading(node, dp string, t collectorapi.NFTablesTableObservation) {
	if t.Masquerading == nil || t.NATPostrouting == nil || len(t.Ports) == 0 {
		return // not collected
	}
	mark, from := uint32(0), ""
	var markedBy []string
	for _, p := range t.Ports {
		for _, c := range append(append([]*collectorapi.NFTablesChain{p.Service, p.Local, p.External, p.Firewall}, p.Other...), p.Endpoints...) {
			if c == nil {
				continue
			}
			for _, r := range c.Rules {
				if v, err := strconv.ParseUint(r.Mark, 0, 32); err == nil && v != 0 {
					mark, from = uint32(v), "set by "+c.Name
					markedBy = append(markedBy, c.Name)
				}
			}
		}
	}
	for _, r := range t.Masquerading.Rules {
		if m := r.MarkMatch; mark == 0 && m != nil && m.Op == "!=" && m.Value == 0 && m.Mask != 0 {
			mark, from = m.Mask, "tested by chain masquerading"
		}
	}
	if mark == 0 {
		mark, from = 0x4000, "kube-proxy's default"
	}
	a := report.Args{"datapath": dp, "mark": fmt.Sprintf("0x%x, %s", mark, from)}
	var evidence []string
	for _, r := range append(append([]collectorapi.NFTablesRule{}, t.NATPostrouting.Rules...), t.Masquerading.Rules...) {
		evidence = append(evidence, r.Text)
	}
	fields := []report.Field{fieldItems("markedBy", slices.Compact(markedBy))}
	if detail := masqueradingGap(t.Masquerading, mark); detail != "" {
		a["detail"] = detail
		nj.EmitNode(report.CodeDPMasqNoRule, node, a, evidence, fields...)
		return
	}
	if !slices.ContainsFunc(t.NATPostrouting.Rules, func(r collectorapi.NFTablesRule) bool { return r.Target == "masquerading" }) {
		a["detail"] = "chain nat-postrouting does not jump to chain masquerading"
		if !t.NATPostrouting.Exists {
			a["detail"] = "base chain nat-postrouting does not exist"
		}
		nj.EmitNode(report.CodeDPMasqNoJump, node, a, evidence, fields...)
	}
}

// masqueradingGap walks chain masquerading with a packet whose mark is mark
// and says why it is not masqueraded, "" when it is.
func masqueradingGap(c *collectorapi.NFTablesChain, mark uint32) string {
	if !c.Exists {
		return "chain masquerading does not exist"
	}
	for _, r := range c.Rules {
		matched := r.Conditions == 0
		if r.Conditions == 1 && r.MarkMatch != nil {
			m := r.MarkMatch
			matched = (mark&m.Mask == m.Value) == (m.Op == "==")
		}
		if !matched {
			continue
		}
		switch {
		case r.Masquerade:
			return ""
		case r.Verdict == "return" || r.Verdict == "accept" || r.Verdict == "drop":
			return fmt.Sprintf("chain masquerading ends marked packets with %q before any masquerade rule", r.Text)
		}
	}
	return fmt.Sprintf("chain masquerading has no masquerade rule for packets marked 0x%x", mark)
}

// markMasqUsers are the Service's chains that jump to KUBE-MARK-MASQ.
func markMasqUsers(b collectorapi.IPTablesBackendObservation) []string {
	seen := map[string]bool{}
	for _, p := range b.Ports {
		for _, c := range []*collectorapi.IPTablesChain{p.Service, p.Local, p.External} {
			if c == nil {
				continue
			}
			if c.Masquerade != nil {
				seen[c.Name] = true
			}
			for _, r := range c.Rules {
				if r.Jump == "KUBE-MARK-MASQ" {
					seen[c.Name] = true
				}
			}
		}
		for _, e := range p.Endpoints {
			if e.Hairpin != "" {
				seen[e.Name] = true
			}
		}
	}
	return sortedKeys(seen)
}

func (nj *nodeJudge) emitExternalMasq(node, dp, port, chain string, family corev1.IPFamily, local, marked bool, rule func() string) {
	a := report.Args{"datapath": dp, "port": port, "chain": chain, report.ArgFamily: string(family)}
	switch {
	case local:
		nj.EmitNode(report.CodeDPSourceKept, node, a, nil)
	case marked:
		a["rule"] = rule()
		nj.EmitNode(report.CodeDPSourceLost, node, a, nil, fieldValue("rule", a["rule"]))
	default:
		nj.EmitNode(report.CodeDPMasqExternal, node, a, nil)
	}
}

func masqPortLabel(spn, proto string) string {
	return spn + "/" + strings.ToUpper(proto)
}

func ruleTexts(rules []collectorapi.IPTablesRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Raw)
	}
	return out
}
