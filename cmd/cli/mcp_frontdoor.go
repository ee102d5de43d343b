package cli

import (
	"context"
	"fmt"

	"github.com/svctrace/kubectl-svctrace/nodes"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// traceFrontdoor is the MCP tool started at a front door. The tool returns
// one ServiceTrace (its declared output schema): the backend the caller
// names, or else the backend whose verdict is worst, since that is the one
// an incident bot asked about; the document's frontdoor.backends names
// every other backend, so the caller can ask for it next.
func (o *MCPOptions) traceFrontdoor(ctx context.Context, entry frontdoor.Entry, args TraceServiceArgs, opts trace.Options) (*report.ServiceTrace, error) {
	if err := validateGatewayPods(args.GatewayPods); err != nil {
		return nil, err
	}
	reader, err := o.deps.frontdoor(o.getter, o.Client)
	if err != nil {
		return nil, err
	}
	fd, err := reader.Read(ctx, entry, frontdoor.ReadOptions{GatewayPods: args.GatewayPods, FindDataPlane: args.From == ""})
	if err != nil {
		return nil, err
	}
	if dp := fd.DataPlane; args.From == "" && dp != nil && len(dp.Pods) > 0 {
		pc, err := nodes.ResolveFrom(ctx, o.Client, entry.Namespace, "pod/"+dp.Pods[0])
		if err != nil {
			return nil, err
		}
		opts.From = pc
	}
	backends := frontdoor.Services(fd)
	if args.Backend != "" {
		found := false
		for _, b := range backends {
			found = found || b == args.Backend
		}
		if !found {
			return nil, fmt.Errorf("backend %s is not a backend Service of %s %s/%s (they are: %v)", args.Backend, entry.Kind, entry.Namespace, entry.Name, backends)
		}
		backends = []string{args.Backend}
	}
	if len(backends) == 0 {
		backends = []string{""}
	}
	var worst *report.ServiceTrace
	for _, b := range backends {
		in, nr, bopts, err := trace.CollectBackend(ctx, o.Client, fd, b, opts)
		if err != nil {
			return nil, err
		}
		t := trace.Assemble(in, nr, bopts)
		if worst == nil || verdictRank[t.Verdict.Status] > verdictRank[worst.Verdict.Status] {
			worst = t
		}
	}
	return worst, nil
}

// verdictRank orders verdicts from best to worst.
var verdictRank = map[report.Status]int{report.StatusPass: 0, report.StatusWarn: 1, report.StatusUnknown: 2, report.StatusFail: 3}
