package trace

import (
	"net"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// explainCauses links failures that a finding on a lower layer accounts for
// to that finding, so that the verdict names the cause and not the first
// layer that felt it. A DNS query that times out through a node that does
// not forward is a DNS symptom; the route layer holds the cause.
func (nj *nodeJudge) explainCauses() {
	forwardOff := map[string]report.CheckRef{} // node → its RT004
	overlay := map[string][]*report.Check{}    // node → its overlay faults
	var pathFaults []*report.Check             // RT002/RT003
	if route := nj.t.Layer(report.LayerRoute); route != nil && route.Status != report.StatusSkipped {
		for i := range route.Checks {
			c := &route.Checks[i]
			switch {
			case c.Code == report.CodeRTForwardOff:
				forwardOff[c.Node] = report.CheckRef{Layer: report.LayerRoute, Code: c.Code, Node: c.Node}
			case c.Code == report.CodeRTNoRoute || c.Code == report.CodeRTDeviceDown:
				pathFaults = append(pathFaults, c)
			case overlayCauses[c.Code] && c.Status != report.StatusPass:
				overlay[c.Node] = append(overlay[c.Node], c)
			}
		}
	}
	// The client's own egress policy denying DNS (NP009) explains its
	// resolver getting no answer: the queries never leave the Pod.
	var dnsEgress *report.CheckRef
	if pl := nj.t.Layer(report.LayerPolicy); pl != nil && pl.Status != report.StatusSkipped {
		for _, c := range pl.Checks {
			if c.Code == report.CodeNPDNSDenied && c.Status == report.StatusFail {
				dnsEgress = &report.CheckRef{Layer: report.LayerPolicy, Code: c.Code, Node: c.Node}
			}
		}
	}
	if len(forwardOff) == 0 && len(pathFaults) == 0 && len(overlay) == 0 && dnsEgress == nil {
		return
	}

	// Cluster DNS: its endpoints and the nodes they run on.
	dnsNodes := map[string]bool{}
	var dnsIPs []string
	for i := range nj.in.DNSSlices {
		for _, e := range nj.in.DNSSlices[i].Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			dnsIPs = append(dnsIPs, e.Addresses...)
			if e.NodeName != nil {
				dnsNodes[*e.NodeName] = true
			}
			if e.NodeName == nil {
				dnsNodes[""] = true // an endpoint on an unknown node keeps DNS reachable for all we know
			}
		}
	}
	// dnsCause is why DNS from node fails, when a route finding says: every
	// DNS endpoint sits on nodes that do not forward (and are not this one),
	// this node has no route to a DNS endpoint, or this node's overlay,
	// which every DNS endpoint is reached through, is broken.
	dnsCause := func(node string, timedOut bool) *report.CheckRef {
		for _, c := range pathFaults {
			if c.Node == node && mentionsAny(c.Message, dnsIPs) {
				return &report.CheckRef{Layer: report.LayerRoute, Code: c.Code, Node: c.Node}
			}
		}
		if len(dnsNodes) == 0 || dnsNodes[node] || dnsNodes[""] {
			return nil
		}
		if ref := overlayCause(overlay[node], dnsNodes, dnsIPs); ref != nil && timedOut {
			// A lost packet times out; a refusal has another cause.
			return ref
		}
		var cause *report.CheckRef
		for n := range dnsNodes {
			ref, off := forwardOff[n]
			if !off {
				return nil
			}
			if cause == nil || ref.Node < cause.Node {
				r := ref
				cause = &r
			}
		}
		return cause
	}

	eps := nj.endpointIndex()
	for _, l := range []report.LayerName{report.LayerDNS, report.LayerRoute} {
		layer := nj.t.Layer(l)
		for i := range layer.Checks {
			c := &layer.Checks[i]
			if c.Status != report.StatusFail || c.ExplainedBy != nil {
				continue
			}
			var cause *report.CheckRef
			switch c.Code {
			case report.CodeDNSLiveFailed:
				cause = dnsCause(c.Node, strings.Contains(c.Message, "timeout"))
			case report.CodeDNSClientNoAnswer:
				cause = dnsEgress
			case report.CodeRTPodTimeout:
				// Timeouts to Pods on a node that does not forward.
				cause = forwardingCause(c, eps.node, forwardOff)
			}
			if cause != nil {
				c.ExplainedBy = cause
				where := ""
				if cause.Node != "" {
					where = " on " + cause.Node
				}
				c.Message += "; explained by " + cause.Code + where + " (" + report.Catalog[cause.Code].Title + ")"
			}
		}
	}
}

// overlayCauses are the route findings about a node's overlay that lose
// the Pod traffic it tunnels to other nodes.
var overlayCauses = map[string]bool{
	report.CodeRTOverlayVTEP: true, report.CodeRTOverlayMTU: true, report.CodeRTPMTUBlackhole: true,
	report.CodeRTOverlayDown: true, report.CodeRTEncapRefused: true, report.CodeRTEncapSilent: true,
}

// overlayCause is the first of a node's overlay faults that concerns the
// nodes the DNS endpoints run on: a finding naming peers (missing tunnel
// entries, a tunnel that does not answer) must name one of them or of
// their addresses; one about the device itself (down, its MTU) concerns
// every remote node.
func overlayCause(faults []*report.Check, dnsNodes map[string]bool, dnsIPs []string) *report.CheckRef {
	for _, c := range faults {
		switch c.Code {
		case report.CodeRTOverlayVTEP, report.CodeRTEncapRefused, report.CodeRTEncapSilent, report.CodeRTPMTUBlackhole:
			named := mentionsAny(c.Message, dnsIPs)
			for n := range dnsNodes {
				named = named || mentionsWord(c.Message, n)
			}
			if !named {
				continue
			}
		}
		return &report.CheckRef{Layer: report.LayerRoute, Code: c.Code, Node: c.Node}
	}
	return nil
}

// mentionsWord reports whether msg names word as a whole token.
func mentionsWord(msg, word string) bool {
	if word == "" {
		return false
	}
	for _, f := range strings.FieldsFunc(msg, func(r rune) bool {
		return r == ' ' || r == ',' || r == '(' || r == ')' || r == ';' || r == ':' || r == '[' || r == ']'
	}) {
		if f == word {
			return true
		}
	}
	return false
}

// deepestCause follows explainedBy links from a check to the finding that
// nothing further explains (a bounded walk: a cycle stops it).
func deepestCause(t *report.ServiceTrace, ref *report.CheckRef) (*report.Check, *report.CheckRef) {
	var cause *report.Check
	var at *report.CheckRef
	for range 8 {
		c := checkByRef(t, ref)
		if c == nil {
			break
		}
		cause, at = c, ref
		if c.ExplainedBy == nil {
			break
		}
		ref = c.ExplainedBy
	}
	return cause, at
}

// forwardingCause is the RT004 of the node every timed-out endpoint of an
// RT007 runs on, when that node does not forward and is not the prober.
func forwardingCause(c *report.Check, epNode map[string]string, forwardOff map[string]report.CheckRef) *report.CheckRef {
	var cause *report.CheckRef
	targets := 0
	for ip, n := range epNode {
		if !mentionsAny(c.Message, []string{ip}) {
			continue
		}
		targets++
		ref, off := forwardOff[n]
		if !off || n == c.Node {
			return nil
		}
		if cause == nil {
			r := ref
			cause = &r
		} else if cause.Node != ref.Node {
			return nil
		}
	}
	if targets == 0 {
		return nil
	}
	return cause
}

// mentionsAny reports whether msg names one of the IPs as a whole address
// (10.0.0.1 is not found in 10.0.0.10).
func mentionsAny(msg string, ips []string) bool {
	fields := strings.FieldsFunc(msg, func(r rune) bool {
		return r == ' ' || r == ',' || r == '(' || r == ')' || r == ';' || r == '/' || r == '[' || r == ']'
	})
	for _, f := range fields {
		host := f
		if h, _, err := net.SplitHostPort(f); err == nil {
			host = h
		}
		for _, ip := range ips {
			if host == ip {
				return true
			}
		}
	}
	return false
}

// checkByRef finds the check a CheckRef points at.
func checkByRef(t *report.ServiceTrace, r *report.CheckRef) *report.Check {
	if r == nil {
		return nil
	}
	l := t.Layer(r.Layer)
	if l == nil {
		return nil
	}
	for i := range l.Checks {
		if c := &l.Checks[i]; c.Code == r.Code && c.Node == r.Node {
			return c
		}
	}
	return nil
}
