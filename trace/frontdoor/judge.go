package frontdoor

import (
	"fmt"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Judge decides the frontdoor layer l from in, with no I/O, and returns the
// summary the trace carries. traced is the backend Service (namespace/name)
// the trace it goes into follows; every trace of the same front door gets
// the same checks, because a broken route is broken for each backend.
func Judge(in *Input, l *report.Layer, traced string) *report.Frontdoor {
	j := &judge{in: in, l: l}
	sum := &report.Frontdoor{Kind: in.Entry.Kind, Namespace: in.Entry.Namespace, Name: in.Entry.Name}
	if in.Entry.Kind == KindIngress {
		sum.Class = j.ingress()
	} else {
		j.gatewayAPI()
		for _, gw := range in.Gateways {
			sum.Gateways = append(sum.Gateways, gw.Namespace+"/"+gw.Name)
			if sum.Class == "" {
				sum.Class = string(gw.Spec.GatewayClassName)
			}
		}
	}
	j.dataPlane()
	j.gaps()
	sum.Backends = Backends(in)
	for i := range sum.Backends {
		b := &sum.Backends[i]
		if b.Kind == "Service" && b.Namespace+"/"+b.Name == traced {
			b.Traced = true
		}
	}
	return sum
}

// judge is one Judge call.
type judge struct {
	in *Input
	l  *report.Layer
}

func (j *judge) emit(code string, args report.Args, fields ...report.Field) {
	j.l.Add(report.NewCheck(code, args, fields...))
}

// Services are the distinct backend Services (namespace/name) of the front
// door, in the order it names them: the Services a trace follows. A backend
// that is not a Service is not among them.
func Services(in *Input) []string {
	var out []string
	seen := map[string]bool{}
	for _, b := range Backends(in) {
		key := b.Namespace + "/" + b.Name
		if b.Kind != "Service" || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, key)
	}
	return out
}

// Backends are every backend the front door names, in order.
func Backends(in *Input) []report.FrontdoorBackend {
	var out []report.FrontdoorBackend
	if ing := in.Ingress; ing != nil {
		for _, p := range ingressBackends(ing) {
			b := report.FrontdoorBackend{Namespace: ing.Namespace, Weight: -1}
			switch s := p.backend.Service; {
			case s != nil:
				b.Kind, b.Name = "Service", s.Name
				b.Port = s.Port.Name
				if s.Port.Number != 0 {
					b.Port = fmt.Sprint(s.Port.Number)
				}
			case p.backend.Resource != nil:
				b.Kind, b.Name = p.backend.Resource.Kind, p.backend.Resource.Name
			}
			out = append(out, b)
		}
		return out
	}
	for _, r := range in.Routes {
		for _, rule := range r.Spec.Rules {
			for _, ref := range rule.BackendRefs {
				b := report.FrontdoorBackend{Kind: "Service", Namespace: r.Namespace, Name: string(ref.Name), Weight: 1}
				if !isServiceRef(ref.BackendObjectReference) {
					b.Kind = string(*ref.Kind)
				}
				if ref.Namespace != nil && *ref.Namespace != "" {
					b.Namespace = string(*ref.Namespace)
				}
				if ref.Port != nil {
					b.Port = fmt.Sprint(*ref.Port)
				}
				if ref.Weight != nil {
					b.Weight = *ref.Weight
				}
				out = append(out, b)
			}
		}
	}
	return out
}

// dataPlane says which Pods stand in for the gateway as the trace's client.
func (j *judge) dataPlane() {
	dp := j.in.DataPlane
	if dp == nil {
		return
	}
	flag := "-A -l " + dp.Selector
	if dp.Namespace != "" {
		flag = "-n " + dp.Namespace + " -l " + dp.Selector
	}
	if dp.Selector == "" {
		j.emit(report.CodeGWNoDataPlane, report.Args{
			"found":        "an IngressClass does not say which Pods run its controller, and --gateway-pods was not given",
			"selectorFlag": "-A"})
		return
	}
	where := " in any namespace"
	if dp.Namespace != "" {
		where = " in namespace " + dp.Namespace
	}
	selector := dp.Selector + " (from " + dp.Source + ")"
	if len(dp.Pods) == 0 {
		j.emit(report.CodeGWNoDataPlane, report.Args{"found": "no running Pod matches " + selector + where, "selectorFlag": flag})
		return
	}
	j.emit(report.CodeGWDataPlaneClient, report.Args{"pod": "pod/" + dp.Pods[0], "count": fmt.Sprint(len(dp.Pods)),
		"selector": selector, "selectorFlag": flag}, report.Field{Key: "pods", Items: dp.Pods})
}

// clusterScoped are the resources read here that have no namespace.
var clusterScoped = map[string]bool{"gatewayclasses": true, "ingressclasses": true, "namespaces": true}

// gaps turns each failed read into the API check that says what was not
// judged.
func (j *judge) gaps() {
	for _, g := range j.in.Gaps {
		scope, scopeFlag := "the cluster", "--all-namespaces"
		if clusterScoped[g.Resource] {
			scopeFlag = ""
		}
		if g.Namespace != "" {
			scope, scopeFlag = "namespace "+g.Namespace, "-n "+g.Namespace
		}
		args := report.Args{"verb": g.Verb, "resource": g.Resource, "scope": scope, "scopeFlag": scopeFlag,
			"impact": g.Impact, "error": g.Error}
		code := report.CodeAPIError
		if g.Forbidden {
			code = report.CodeAPIForbidden
		}
		c := report.NewCheck(code, args)
		// A read that failed leaves the layer unjudged, not failed: the
		// front door may be fine.
		c.Status = report.StatusUnknown
		c.NextStep = strings.TrimSpace(c.NextStep)
		j.l.Add(c)
	}
}
