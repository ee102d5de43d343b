package frontdoor

import (
	"fmt"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Annotations that bind an Ingress to a class.
const (
	annotationDefaultClass = networkingv1.AnnotationIsDefaultIngressClass
	annotationLegacyClass  = "kubernetes.io/ingress.class"
)

// ingressPath is one place an Ingress sends traffic: a rule's path or the
// default backend, with how a message names it.
type ingressPath struct {
	label   string
	backend networkingv1.IngressBackend
}

// ingressBackends lists the default backend and every rule path.
func ingressBackends(ing *networkingv1.Ingress) []ingressPath {
	var out []ingressPath
	if b := ing.Spec.DefaultBackend; b != nil {
		out = append(out, ingressPath{label: "the default backend", backend: *b})
	}
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		host := r.Host
		if host == "" {
			host = "*"
		}
		for _, p := range r.HTTP.Paths {
			out = append(out, ingressPath{label: "path " + host + p.Path, backend: p.Backend})
		}
	}
	return out
}

// ingress judges the entry Ingress and returns its class's name.
func (j *judge) ingress() string {
	ing := j.in.Ingress
	args := report.Args{"ingress": ing.Namespace + "/" + ing.Name, "name": ing.Name, "namespace": ing.Namespace}
	class := j.ingressClass(args)
	var addrs []string
	for _, a := range ing.Status.LoadBalancer.Ingress {
		if a.IP != "" {
			addrs = append(addrs, a.IP)
		} else if a.Hostname != "" {
			addrs = append(addrs, a.Hostname)
		}
	}
	if len(addrs) == 0 {
		j.emit(report.CodeINGNoAddress, args)
	} else {
		j.emit(report.CodeINGAddress, withArgs(args, report.Args{"addresses": strings.Join(addrs, ", ")}))
	}
	j.ingressTLS(args)
	paths := ingressBackends(ing)
	if len(paths) == 0 {
		j.emit(report.CodeINGNoBackend, args)
	}
	for _, p := range paths {
		j.ingressBackend(args, p)
	}
	return class
}

// ingressClass finds the class that binds the Ingress to a controller: the
// one spec.ingressClassName names, or else the deprecated annotation's, or
// else the cluster's default class.
func (j *judge) ingressClass(args report.Args) string {
	ing := j.in.Ingress
	classRead := !j.hasGap("list", "ingressclasses")
	find := func(name string) *networkingv1.IngressClass {
		for i := range j.in.IngressClasses {
			if j.in.IngressClasses[i].Name == name {
				return &j.in.IngressClasses[i]
			}
		}
		return nil
	}
	if n := ing.Spec.IngressClassName; n != nil && *n != "" {
		c := find(*n)
		a := withArgs(args, report.Args{"class": *n})
		switch {
		case c != nil:
			j.emit(report.CodeINGClass, withArgs(a, report.Args{"controller": c.Spec.Controller, "how": ""}))
		case classRead:
			j.emit(report.CodeINGClassNotFound, a)
		}
		return *n
	}
	if legacy := ing.Annotations[annotationLegacyClass]; legacy != "" {
		controller := "not named: the annotation names no IngressClass object"
		if c := find(legacy); c != nil {
			controller = c.Spec.Controller
		}
		j.emit(report.CodeINGClass, withArgs(args, report.Args{"class": legacy, "controller": controller,
			"how": ", named by the deprecated " + annotationLegacyClass + " annotation"}))
		return legacy
	}
	if !classRead {
		return ""
	}
	var defaults []string
	for _, c := range j.in.IngressClasses {
		if c.Annotations[annotationDefaultClass] == "true" {
			defaults = append(defaults, c.Name)
		}
	}
	slices.Sort(defaults)
	switch len(defaults) {
	case 0:
		j.emit(report.CodeINGNoClass, withArgs(args, report.Args{"legacy": ""}))
		return ""
	case 1:
	default:
		j.emit(report.CodeINGSeveralDefaults, report.Args{"count": fmt.Sprint(len(defaults)), "classes": strings.Join(defaults, ", ")})
	}
	c := find(defaults[0])
	j.emit(report.CodeINGClass, withArgs(args, report.Args{"class": c.Name, "controller": c.Spec.Controller,
		"how": ", the cluster's default IngressClass (the Ingress names none)"}))
	return c.Name
}

// ingressTLS reports the TLS Secrets that do not exist.
func (j *judge) ingressTLS(args report.Args) {
	var present []string
	for _, t := range j.in.Ingress.Spec.TLS {
		exists, read := j.in.TLSSecrets[t.SecretName]
		switch {
		case t.SecretName == "" || !read:
		case exists:
			present = append(present, t.SecretName)
		default:
			hosts := strings.Join(t.Hosts, ", ")
			if hosts == "" {
				hosts = "every host"
			}
			j.emit(report.CodeINGTLSSecretMissing, withArgs(args, report.Args{"secret": t.SecretName, "hosts": hosts}))
		}
	}
	if len(present) > 0 {
		j.emit(report.CodeINGTLSSecrets, withArgs(args, report.Args{"secrets": strings.Join(present, ", ")}))
	}
}

// ingressBackend judges one path's backend: a Service that exists, on a
// port (by number or by name) it exposes.
func (j *judge) ingressBackend(args report.Args, p ingressPath) {
	a := withArgs(args, report.Args{"path": p.label})
	if r := p.backend.Resource; r != nil {
		a["backendKind"] = r.Kind
		j.emit(report.CodeINGResourceBackend, a)
		return
	}
	s := p.backend.Service
	if s == nil {
		return
	}
	a["backend"] = j.in.Ingress.Namespace + "/" + s.Name
	a["backendName"] = s.Name
	svc, read := j.in.Services[serviceKey(j.in.Ingress.Namespace, s.Name)]
	switch {
	case !read:
		return
	case svc == nil:
		j.emit(report.CodeINGBackendNotFound, a)
		return
	}
	ok := servicePortNumber(svc, s.Port.Number)
	a["port"] = fmt.Sprint(s.Port.Number)
	if s.Port.Name != "" {
		ok = servicePortName(svc, s.Port.Name)
		a["port"] = s.Port.Name
	}
	if !ok {
		a["ports"] = servicePortsText(svc)
		j.emit(report.CodeINGBackendPort, a)
		return
	}
	j.emit(report.CodeINGBackendResolved, a)
}
