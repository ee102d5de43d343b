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
	route := nj.t.Layer(report.LayerRoute)
	if route == nil || route.Status == report.StatusSkipped {
		return
	}
	forwardOff := map[string]report.CheckRef{} // node → its RT004
	var pathFaults []int                       // RT002/RT003 checks, by index in route.Checks
	for i, c := range route.Checks {
		switch c.Code {
		case report.CodeRTForwardOff:
			forwardOff[c.Node] = report.CheckRef{Layer: report.LayerRoute, Code: c.Code, Node: c.Node}
		case report.CodeRTNoRoute, report.CodeRTDeviceDown:
			pathFaults = append(pathFaults, i)
		}
	}
	if len(forwardOff) == 0 && len(pathFaults) == 0 {
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
	// or this node has no route to a DNS endpoint.
	dnsCause := func(node string) *report.CheckRef {
		for _, i := range pathFaults {
			c := route.Checks[i]
			if c.Node == node && mentionsAny(c.Message, dnsIPs) {
				return &report.CheckRef{Layer: report.LayerRoute, Code: c.Code, Node: c.Node}
			}
		}
		if len(dnsNodes) == 0 {
			return nil
		}
		var cause *report.CheckRef
		for n := range dnsNodes {
			ref, off := forwardOff[n]
			if !off || n == node {
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
				cause = dnsCause(c.Node)
			case report.CodeRTPodTimeout:
				// Timeouts to Pods on a node that does not forward.
				cause = forwardingCause(c, eps.node, forwardOff)
			}
			if cause != nil {
				c.ExplainedBy = cause
				c.Message += "; explained by " + cause.Code + " on " + cause.Node + " (" + report.Catalog[cause.Code].Title + ")"
			}
		}
	}
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
