package trace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// CollectBackend is Collect for one backend Service (namespace/name) of a
// front door: the Service is read and its nodes inspected as for any
// Service, and fd travels in the Input, so Assemble (live or from a saved
// trace) judges the frontdoor layer too. The trace follows the port the
// front door sends to when the Service has it; when it does not, the
// frontdoor layer says so and every port is traced. The Options returned
// are opts with that port: Assemble (and a saved trace) take them. backend
// "" (a front door with no backend Service) reads nothing more.
func CollectBackend(ctx context.Context, client kubernetes.Interface, fd *frontdoor.Input, backend string, opts Options) (*input.Input, *plan.NodeReport, Options, error) {
	if backend == "" {
		return &input.Input{Namespace: fd.Entry.Namespace, Frontdoor: fd}, nil, opts, nil
	}
	namespace, name, _ := strings.Cut(backend, "/")
	if opts.Port == "" {
		opts.Port = backendPort(fd, backend)
	}
	in, nodes, err := Collect(ctx, client, namespace, name, opts)
	var noPort *PortNotFoundError
	if errors.As(err, &noPort) && opts.Port != "" {
		opts.Port = ""
		in, nodes, err = Collect(ctx, client, namespace, name, opts)
	}
	if err != nil {
		return nil, nil, opts, err
	}
	in.Frontdoor = fd
	return in, nodes, opts, nil
}

// backendPort is the one port the front door sends to Service backend, or
// "" when it sends to several (or names none).
func backendPort(fd *frontdoor.Input, backend string) string {
	var ports []string
	for _, b := range frontdoor.Backends(fd) {
		if b.Kind == "Service" && b.Namespace+"/"+b.Name == backend && b.Port != "" && !slices.Contains(ports, b.Port) {
			ports = append(ports, b.Port)
		}
	}
	if len(ports) == 1 {
		return ports[0]
	}
	return ""
}

// judgeFrontdoor prepends the frontdoor layer when the trace started at a
// front door. It goes first because a packet meets the front door first,
// and the verdict names the first failing layer.
func judgeFrontdoor(in *input.Input, t *report.ServiceTrace) {
	if in.Frontdoor == nil {
		return
	}
	t.Layers = slices.Insert(t.Layers, 0, report.Layer{Name: report.LayerFrontdoor, Checks: []report.Check{}})
	traced := ""
	if in.Name != "" {
		traced = in.Namespace + "/" + in.Name
	}
	t.Frontdoor = frontdoor.Judge(in.Frontdoor, &t.Layers[0], traced)
}

// frontdoorOnly is the trace of a front door that resolves to no backend
// Service: the frontdoor layer, and every Service layer skipped.
func frontdoorOnly(in *input.Input, opts Options) *report.ServiceTrace {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	domain := opts.ClusterDomain
	if domain == "" {
		domain = plan.DefaultClusterDomain
	}
	t := &report.ServiceTrace{
		APIVersion: report.APIVersion,
		Kind:       report.Kind,
		Metadata: report.Metadata{Time: now().UTC(), Context: opts.Context, SvctraceVersion: opts.Version,
			Port: opts.Port, ClusterDomain: domain, Client: opts.From.String()},
		Service: report.ServiceSummary{Namespace: in.Namespace},
	}
	for _, name := range report.LayerOrder {
		t.Layers = append(t.Layers, report.Layer{Name: name, Checks: []report.Check{}})
	}
	judgeFrontdoor(in, t)
	e := in.Frontdoor.Entry
	for i := range t.Layers[1:] {
		t.Layers[i+1].Skip(fmt.Sprintf("%s %s/%s sends to no Service", e.Kind, e.Namespace, e.Name))
	}
	finish(t)
	return t
}
