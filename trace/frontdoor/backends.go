package frontdoor

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// backends judges every backendRef of route r: a Service that exists, in a
// namespace the route may refer to, on a port it exposes, with a weight
// that sends it traffic. Where the controller's ResolvedRefs condition is
// False its reason is quoted with the finding, so the user sees svctrace's
// finding and the controller's word on it side by side.
func (j *judge) backends(r *Route) {
	says := controllerRefsReason(r)
	for i, rule := range r.Spec.Rules {
		ruleName := fmt.Sprint(i)
		if rule.Name != nil {
			ruleName = string(*rule.Name)
		}
		var total int64
		for _, b := range rule.BackendRefs {
			total += int64(weight(b))
		}
		if total == 0 && len(rule.BackendRefs) > 0 {
			j.emit(report.CodeGWRuleNoWeight, withArgs(routeArgs(r), report.Args{"rule": ruleName}))
		}
		for _, b := range rule.BackendRefs {
			j.backend(r, ruleName, b, total, says)
		}
	}
}

func (j *judge) backend(r *Route, rule string, b gwv1.BackendRef, total int64, says string) {
	ns := r.Namespace
	if b.Namespace != nil && *b.Namespace != "" {
		ns = string(*b.Namespace)
	}
	args := withArgs(routeArgs(r), report.Args{"rule": rule, "backend": ns + "/" + string(b.Name),
		"backendName": string(b.Name), "backendNamespace": ns, "controllerSays": says})
	if !isServiceRef(b.BackendObjectReference) {
		kind := "resource"
		if b.Kind != nil {
			kind = string(*b.Kind)
		}
		args["backendKind"] = kind
		j.emit(report.CodeGWBackendNotService, args)
		return
	}
	w := weight(b)
	args["share"] = "0%"
	if total > 0 {
		args["share"] = fmt.Sprintf("%d%%", int64(w)*100/total)
	}
	if w == 0 && total > 0 {
		j.emit(report.CodeGWBackendZeroWeight, args)
	}
	if ns != r.Namespace {
		grant := j.grantFor(r, ns, string(b.Name))
		if grant == "" {
			if !j.hasGap("list", "referencegrants") {
				j.emit(report.CodeGWNoReferenceGrant, args)
			}
			return
		}
		j.emit(report.CodeGWReferenceGrantFound, withArgs(args, report.Args{"grant": ns + "/" + grant}))
	}
	svc, read := j.in.Services[serviceKey(ns, string(b.Name))]
	switch {
	case !read:
		return // the read failed: a gap says so
	case svc == nil:
		j.emit(report.CodeGWBackendNotFound, args)
		return
	case b.Port == nil:
		j.emit(report.CodeGWBackendPortMissing, args)
		return
	}
	args["port"] = fmt.Sprint(*b.Port)
	if !servicePortNumber(svc, int32(*b.Port)) {
		args["ports"] = servicePortsText(svc)
		j.emit(report.CodeGWBackendPort, args)
		return
	}
	j.emit(report.CodeGWBackendResolved, args)
}

func weight(b gwv1.BackendRef) int32 {
	if b.Weight == nil {
		return 1
	}
	return *b.Weight
}

// grantFor names the ReferenceGrant in ns that lets route r refer to
// Service name, or "".
func (j *judge) grantFor(r *Route, ns, name string) string {
	for _, g := range j.in.ReferenceGrants {
		if g.Namespace != ns {
			continue
		}
		from := false
		for _, f := range g.Spec.From {
			if string(f.Group) == GroupName && string(f.Kind) == r.Kind && string(f.Namespace) == r.Namespace {
				from = true
			}
		}
		if !from {
			continue
		}
		for _, t := range g.Spec.To {
			if (t.Group == "" || t.Group == "core") && t.Kind == "Service" && (t.Name == nil || string(*t.Name) == name) {
				return g.Name
			}
		}
	}
	return ""
}

// controllerRefsReason is " (the controller says REASON: MESSAGE)" for the
// first parent whose ResolvedRefs condition is not True, or "".
func controllerRefsReason(r *Route) string {
	for _, st := range r.Status.Parents {
		if c := meta.FindStatusCondition(st.Conditions, string(gwv1.RouteConditionResolvedRefs)); c != nil && c.Status != metav1.ConditionTrue {
			msg := ""
			if c.Message != "" {
				msg = ": " + c.Message
			}
			return fmt.Sprintf(" (%s says %s%s)", st.ControllerName, c.Reason, msg)
		}
	}
	return ""
}

func servicePortNumber(svc *corev1.Service, port int32) bool {
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			return true
		}
	}
	return false
}

func servicePortName(svc *corev1.Service, name string) bool {
	for _, p := range svc.Spec.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

// servicePortsText lists a Service's ports as "name port/protocol".
func servicePortsText(svc *corev1.Service) string {
	var out []string
	for _, p := range svc.Spec.Ports {
		s := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.Name != "" {
			s = p.Name + " " + s
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "no ports"
	}
	return strings.Join(out, ", ")
}
