package render

import (
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// frontdoorHop is the hop of a trace that started at a route, a Gateway or
// an Ingress, drawn between the client and DNS: the gateway is where the
// packet enters, before any name is looked up (the gateway's own lookup,
// if any, is its business). It is "gateway" for the Gateway API and
// "ingress" for an Ingress.
func frontdoorHop(t *report.ServiceTrace) hop {
	f := t.Frontdoor
	h := hop{name: "gateway", status: report.StatusSkipped}
	if l := t.Layer(report.LayerFrontdoor); l != nil {
		h.status = l.Status
	}
	entry := strings.ToLower(f.Kind) + " " + f.Name
	switch {
	case f.Kind == "Ingress":
		h.name = "ingress"
		h.details = []string{f.Name}
		if f.Class != "" {
			h.details = []string{f.Name + " (" + f.Class + ")", f.Name}
		}
	case f.Kind == "Gateway":
		h.details = []string{f.Name}
	case len(f.Gateways) > 0:
		gw := f.Gateways[0]
		if i := strings.LastIndex(gw, "/"); i >= 0 {
			gw = gw[i+1:]
		}
		h.details = []string{gw + ", " + entry, gw}
	default:
		h.details = []string{entry}
	}
	return h
}

// hopsWithFrontdoor puts the front door's hop after the client.
func hopsWithFrontdoor(t *report.ServiceTrace, hops []hop) []hop {
	if t.Frontdoor == nil {
		return hops
	}
	out := append([]hop{hops[0], frontdoorHop(t)}, hops[1:]...)
	return out
}

// pathPriority is the order the path's details are kept in (the last one is
// shortened first), with the front door's hop, when there is one, kept
// after the node hop and before DNS.
func pathPriority(t *report.ServiceTrace, service []int) []int {
	if t.Frontdoor == nil {
		return service
	}
	var out []int
	for _, i := range service {
		if i == 1 {
			out = append(out, 1) // the front door's hop
		}
		if i > 0 {
			i++
		}
		out = append(out, i)
	}
	return out
}

// hopIndex is the hop of a layer in the drawn path.
func hopIndex(t *report.ServiceTrace, l report.LayerName) int {
	if t.Frontdoor == nil {
		return hopOfLayer(l)
	}
	if l == report.LayerFrontdoor {
		return 1
	}
	return hopOfLayer(l) + 1
}

// svgWidthFor is the SVG's width: wide enough for every hop of the path.
func svgWidthFor(t *report.ServiceTrace) int {
	n := len(hopsWithFrontdoor(t, pathHops(t)))
	return max(svgWidth, 2*svgMargin+n*hopWidth+(n-1)*hopGap)
}
