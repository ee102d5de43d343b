package frontdoor

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// gatewayAPI judges the entry route (or the entry Gateway's routes) and
// every Gateway involved.
func (j *judge) gatewayAPI() {
	for i := range j.in.Gateways {
		j.gateway(&j.in.Gateways[i])
	}
	if j.in.Entry.Kind == KindGateway && len(j.in.Routes) == 0 && len(j.in.Gateways) == 1 && !j.hasGap("list", "routes") {
		gw := &j.in.Gateways[0]
		j.emit(report.CodeGWNoRoutes, report.Args{"kinds": strings.Join(RouteKinds, ", "), "gateway": gw.Namespace + "/" + gw.Name})
	}
	for i := range j.in.Routes {
		r := &j.in.Routes[i]
		for _, ref := range r.Spec.ParentRefs {
			if isGatewayRef(ref) {
				j.parent(r, ref)
			}
		}
		j.backends(r)
	}
}

// routeArgs are the placeholders of every check about route r.
func routeArgs(r *Route) report.Args {
	return report.Args{"route": r.Kind + " " + r.Namespace + "/" + r.Name, "resource": strings.ToLower(r.Kind),
		"name": r.Name, "routeNamespace": r.Namespace, "kind": r.Kind}
}

func gatewayArgs(gw *gwv1.Gateway, a report.Args) report.Args {
	a["gateway"] = gw.Namespace + "/" + gw.Name
	a["gatewayName"], a["gatewayNamespace"] = gw.Name, gw.Namespace
	return a
}

// gateway judges one Gateway: its class, its own conditions and addresses.
func (j *judge) gateway(gw *gwv1.Gateway) {
	class := j.class(string(gw.Spec.GatewayClassName))
	args := gatewayArgs(gw, report.Args{"class": string(gw.Spec.GatewayClassName)})
	switch {
	case class == nil && !j.hasGap("list", "gatewayclasses"):
		j.emit(report.CodeGWClassNotFound, args)
	case class != nil && !conditionTrue(class.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted)):
		reason, msg := conditionText(class.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted))
		j.emit(report.CodeGWClassNotAccepted, report.Args{"class": class.Name, "controller": string(class.Spec.ControllerName),
			"reason": reason, "message": msg})
	}
	ready := true
	for _, cond := range []string{string(gwv1.GatewayConditionAccepted), string(gwv1.GatewayConditionProgrammed)} {
		if conditionTrue(gw.Status.Conditions, cond) {
			continue
		}
		ready = false
		reason, msg := conditionText(gw.Status.Conditions, cond)
		j.emit(report.CodeGWGatewayNotReady, withArgs(args, report.Args{"condition": cond,
			"conditionStatus": conditionStatus(gw.Status.Conditions, cond), "reason": reason, "message": msg}))
	}
	var addrs []string
	for _, a := range gw.Status.Addresses {
		addrs = append(addrs, a.Value)
	}
	if len(addrs) == 0 {
		j.emit(report.CodeGWNoAddress, args)
		return
	}
	if ready {
		j.emit(report.CodeGWGatewayReady, withArgs(args, report.Args{"addresses": strings.Join(addrs, ", ")}),
			report.Field{Key: "addresses", Items: addrs})
	}
}

// parent judges route r on one parent Gateway: what its controller said,
// and which listeners admit it.
func (j *judge) parent(r *Route, ref gwv1.ParentReference) {
	args := routeArgs(r)
	ns := parentNamespace(ref, r.Namespace)
	args["parent"] = parentText(ns, ref)
	args["parentNamespace"] = ns
	if e := j.in.Entry; e.Kind == KindGateway && (ns != e.Namespace || string(ref.Name) != e.Name) {
		return // a trace of one Gateway judges its routes on it only
	}
	gw := j.gatewayNamed(ns, string(ref.Name))
	if gw == nil {
		if !j.hasGap("get", "gateways") {
			j.emit(report.CodeGWParentNotFound, args)
		}
		return
	}
	j.controllerSaid(r, ref, gw, args)
	verdicts := admittingListeners(r, gw, ref, j.in.NamespaceLabels)
	var admitted, why []string
	for _, v := range verdicts {
		if !v.admitted {
			why = append(why, v.why)
			continue
		}
		name := string(v.listener.Name)
		admitted = append(admitted, fmt.Sprintf("%s (%s %d%s)", name, v.listener.Protocol, v.listener.Port, hostsText(v.hostnames)))
		j.listenerConditions(gw, name)
	}
	gargs := gatewayArgs(gw, withArgs(args, nil))
	if len(admitted) == 0 {
		section := ""
		if ref.SectionName != nil {
			section = " on listener " + string(*ref.SectionName)
		} else if ref.Port != nil {
			section = fmt.Sprintf(" on port %d", *ref.Port)
		}
		if len(why) == 0 {
			why = []string{"the Gateway has no such listener"}
		}
		gargs["section"], gargs["why"] = section, strings.Join(why, "; ")
		j.emit(report.CodeGWNoListener, gargs, report.Field{Key: "listeners", Items: why})
		return
	}
	gargs["listeners"] = strings.Join(admitted, ", ")
	j.emit(report.CodeGWListenerMatched, gargs)
}

// controllerSaid quotes the route's status for this parent: its controller's
// Accepted and ResolvedRefs conditions, or that no controller wrote any.
func (j *judge) controllerSaid(r *Route, ref gwv1.ParentReference, gw *gwv1.Gateway, args report.Args) {
	statuses := parentStatuses(r, ref)
	if len(statuses) == 0 {
		args["class"] = string(gw.Spec.GatewayClassName)
		args["classState"] = j.classState(string(gw.Spec.GatewayClassName))
		j.emit(report.CodeGWNoController, args)
		return
	}
	for _, st := range statuses {
		a := withArgs(args, report.Args{"controller": string(st.ControllerName)})
		ok := true
		if !conditionTrue(st.Conditions, string(gwv1.RouteConditionAccepted)) {
			ok = false
			a["reason"], a["message"] = conditionText(st.Conditions, string(gwv1.RouteConditionAccepted))
			j.emit(report.CodeGWRouteNotAccepted, a)
		}
		if c := meta.FindStatusCondition(st.Conditions, string(gwv1.RouteConditionResolvedRefs)); c != nil && c.Status != metav1.ConditionTrue {
			ok = false
			b := withArgs(a, report.Args{"reason": c.Reason, "message": c.Message})
			j.emit(report.CodeGWRefsNotResolved, b)
		}
		for _, c := range st.Conditions {
			if c.ObservedGeneration != 0 && c.ObservedGeneration < r.Generation {
				j.emit(report.CodeGWStatusStale, withArgs(a, report.Args{"observed": fmt.Sprint(c.ObservedGeneration),
					"generation": fmt.Sprint(r.Generation)}))
				break
			}
		}
		if ok {
			j.emit(report.CodeGWRouteAccepted, a)
		}
	}
}

// classState says whether the GatewayClass's controller is at work: it
// accepted this class or another with the same controllerName.
func (j *judge) classState(name string) string {
	class := j.class(name)
	if class == nil {
		return "the Gateway's GatewayClass " + name + " does not exist, so no controller is bound to it"
	}
	ctrl := string(class.Spec.ControllerName)
	if conditionTrue(class.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted)) {
		return fmt.Sprintf("the Gateway's GatewayClass %s is Accepted by %s, which has not judged this route (is the route newer than its last reconcile, or filtered out?)", name, ctrl)
	}
	for _, c := range j.in.GatewayClasses {
		if string(c.Spec.ControllerName) == ctrl && conditionTrue(c.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted)) {
			return fmt.Sprintf("the Gateway's GatewayClass %s (controllerName %s) is not Accepted, though GatewayClass %s with the same controllerName is", name, ctrl, c.Name)
		}
	}
	return fmt.Sprintf("the Gateway's GatewayClass %s names controllerName %s, and no GatewayClass with that controllerName is Accepted: that controller is likely not running", name, ctrl)
}

// listenerConditions reports a listener the controller marked not ready.
func (j *judge) listenerConditions(gw *gwv1.Gateway, name string) {
	for _, ls := range gw.Status.Listeners {
		if string(ls.Name) != name {
			continue
		}
		for _, c := range ls.Conditions {
			bad := c.Status != metav1.ConditionTrue
			if c.Type == string(gwv1.ListenerConditionConflicted) {
				bad = c.Status == metav1.ConditionTrue
			}
			switch gwv1.ListenerConditionType(c.Type) {
			case gwv1.ListenerConditionAccepted, gwv1.ListenerConditionProgrammed, gwv1.ListenerConditionResolvedRefs, gwv1.ListenerConditionConflicted:
			default:
				continue
			}
			if bad {
				j.emit(report.CodeGWListenerNotReady, gatewayArgs(gw, report.Args{"listener": name, "condition": c.Type,
					"conditionStatus": string(c.Status), "reason": c.Reason, "message": c.Message}))
			}
		}
	}
}

// parentStatuses are the route's status entries for ref (one per controller
// that judged it).
func parentStatuses(r *Route, ref gwv1.ParentReference) []gwv1.RouteParentStatus {
	var out []gwv1.RouteParentStatus
	ns := parentNamespace(ref, r.Namespace)
	for _, st := range r.Status.Parents {
		p := st.ParentRef
		if !isGatewayRef(p) || string(p.Name) != string(ref.Name) || parentNamespace(p, r.Namespace) != ns {
			continue
		}
		if !equalPtr(p.SectionName, ref.SectionName) || !equalPtr(p.Port, ref.Port) {
			continue
		}
		out = append(out, st)
	}
	return out
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func (j *judge) gatewayNamed(ns, name string) *gwv1.Gateway {
	for i := range j.in.Gateways {
		if gw := &j.in.Gateways[i]; gw.Namespace == ns && gw.Name == name {
			return gw
		}
	}
	return nil
}

func (j *judge) class(name string) *gwv1.GatewayClass {
	for i := range j.in.GatewayClasses {
		if c := &j.in.GatewayClasses[i]; c.Name == name {
			return c
		}
	}
	return nil
}

// hasGap reports whether a read with this verb of a resource whose name
// ends in resource failed: the object it looked for may exist, so no "not
// found" is reported then.
func (j *judge) hasGap(verb, resource string) bool {
	for _, g := range j.in.Gaps {
		if g.Verb == verb && strings.HasSuffix(g.Resource, resource) {
			return true
		}
	}
	return false
}

func parentText(ns string, ref gwv1.ParentReference) string {
	s := "Gateway " + ns + "/" + string(ref.Name)
	if ref.SectionName != nil {
		s += " listener " + string(*ref.SectionName)
	}
	if ref.Port != nil {
		s += fmt.Sprintf(" port %d", *ref.Port)
	}
	return s
}

func hostsText(hs []string) string {
	if len(hs) == 0 {
		return ", any hostname"
	}
	return ", " + strings.Join(hs, ", ")
}

func conditionTrue(conds []metav1.Condition, t string) bool {
	return meta.IsStatusConditionTrue(conds, t)
}

func conditionStatus(conds []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return "absent"
}

// conditionText is a condition's reason and message as the controller
// wrote them, or what their absence means.
func conditionText(conds []metav1.Condition, t string) (reason, message string) {
	c := meta.FindStatusCondition(conds, t)
	if c == nil {
		return "no " + t + " condition", "no controller has written it"
	}
	msg := c.Message
	if msg == "" {
		msg = "(no message)"
	}
	return c.Reason, msg
}

// withArgs copies a and adds b.
func withArgs(a, b report.Args) report.Args {
	out := make(report.Args, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
