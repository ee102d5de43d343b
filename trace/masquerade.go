package trace

import (
	"fmt"
	"slices"

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
				nj.emitExternalMasq(node, dp, port, p.External.Name, local, mark != nil, func() string { return mark.Raw })
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
				nj.emitExternalMasq(node, dp, masqPortLabel(p.ServicePortName, p.Protocol), p.External.Name, local, mark != nil, func() string { return mark.Text })
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
