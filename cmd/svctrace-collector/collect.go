package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/svctrace/kubectl-svctrace/collectors"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/conntrack"
	"github.com/svctrace/kubectl-svctrace/collectors/dns"
	"github.com/svctrace/kubectl-svctrace/collectors/ebpf"
	"github.com/svctrace/kubectl-svctrace/collectors/iptables"
	"github.com/svctrace/kubectl-svctrace/collectors/ipvs"
	"github.com/svctrace/kubectl-svctrace/collectors/nftables"
	"github.com/svctrace/kubectl-svctrace/collectors/probe"
	"github.com/svctrace/kubectl-svctrace/collectors/proxy"
	"github.com/svctrace/kubectl-svctrace/collectors/route"
	"github.com/svctrace/kubectl-svctrace/collectors/sockets"
)

// Options are the collector's own knobs (flags), as opposed to the request.
type Options struct {
	ProxyMetricsAddress string
	ProxyHealthzAddress string
	BPFFSRoot           string
	Timeout             time.Duration
	FlowCap             int
	ProbeConcurrency    int
	ConntrackMethod     string
	// IPTablesReader is iptables.Query.Reader: empty reads each backend from
	// the kernel (netlink for nf_tables, the table blob for legacy) with the
	// iptables commands as fallback; "text" reads through the commands only.
	IPTablesReader string
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// Collect runs every requested section concurrently and assembles the
// observation. Sections never fail the run: each one records its own error.
func Collect(ctx context.Context, req *collectorapi.Request, opts Options) *collectorapi.Observation {
	start := time.Now()
	late := collectors.StartLateness()
	obs := &collectorapi.Observation{
		APIVersion:  collectorapi.ObservationAPIVersion,
		Kind:        collectorapi.ObservationKind,
		NodeName:    req.NodeName,
		Service:     req.ServiceKey(),
		CollectedAt: start.UTC(),
	}
	obs.Hostname, _ = os.Hostname()

	// The conntrack statistics sample spans the other sections' work: it
	// ends when they are done (after conntrack.MinSampleMillis at least,
	// DefaultConntrackSampleMillis at most), instead of holding every
	// trace for a second of its own.
	othersDone := make(chan struct{})
	var wg, others sync.WaitGroup
	for _, s := range sections(req, opts, &obs.Sections, othersDone) {
		if !req.Wants(s.name) {
			continue
		}
		if s.name != collectorapi.SectionConntrack {
			others.Add(1)
			wg.Go(func() { defer others.Done(); s.run(ctx) })
			continue
		}
		wg.Go(func() { s.run(ctx) })
	}
	go func() { others.Wait(); close(othersDone) }()
	wg.Wait()
	rereadIPTablesEntries(ctx, req, opts, obs)

	obs.DurationMillis = collectors.Millis(time.Since(start))
	obs.Collector = collectorapi.CollectorInfo{
		Version:      version,
		GoVersion:    runtime.Version(),
		Capabilities: collectors.ReadCapabilities(),
		Resources:    collectors.ReadResources(),
		LateMillis:   collectors.Millis(late.Stop()),
	}
	return obs
}

// section is one section of the observation and the run that fills it.
type section struct {
	name string
	run  func(context.Context)
}

// newSection reads one section with read(ctx, arg) into *slot, the section's
// own field of Sections, so that concurrent runs do not race. RunSection
// times the read and records its error or panic in the section.
func newSection[T, A any](name string, slot **collectorapi.Section[T], read func(context.Context, A) (*T, error), arg A) section {
	return section{name: name, run: func(ctx context.Context) {
		*slot = collectors.RunSection(ctx, func(ctx context.Context) (*T, error) { return read(ctx, arg) })
	}}
}

// sections wires every section name to its reader and its field of out, in
// the order of collectorapi.AllSections.
func sections(req *collectorapi.Request, opts Options, out *collectorapi.Sections, othersDone <-chan struct{}) []section {
	return []section{
		newSection(collectorapi.SectionProxy, &out.Proxy, proxy.Read, proxy.Options{
			MetricsAddress: opts.ProxyMetricsAddress,
			HealthzAddress: opts.ProxyHealthzAddress,
			BPFFSRoot:      opts.BPFFSRoot,
		}),
		newSection(collectorapi.SectionIPTables, &out.IPTables, iptables.Read, iptables.Query{Service: req.Service, Endpoints: req.Endpoints, Reader: opts.IPTablesReader}),
		newSection(collectorapi.SectionNFTables, &out.NFTables, nftables.Read, nftables.Query{Service: req.Service, Endpoints: req.Endpoints}),
		newSection(collectorapi.SectionIPVS, &out.IPVS, ipvs.Read, req),
		newSection(collectorapi.SectionEBPF, &out.EBPF, func(ctx context.Context, root string) (*collectorapi.EBPFObservation, error) {
			return ebpf.Read(ctx, req, root)
		}, opts.BPFFSRoot),
		newSection(collectorapi.SectionConntrack, &out.Conntrack, (&conntrack.Reader{FlowCap: opts.FlowCap, Method: opts.ConntrackMethod, SampleUntil: othersDone}).Read, req),
		newSection(collectorapi.SectionRoute, &out.Route, route.Read, req),
		newSection(collectorapi.SectionDNS, &out.DNS, dns.Read, req),
		newSection(collectorapi.SectionProbe, &out.Probe, func(ctx context.Context, concurrency int) (*collectorapi.ProbeObservation, error) {
			return probe.Read(ctx, req, concurrency)
		}, opts.ProbeConcurrency),
		newSection(collectorapi.SectionSockets, &out.Sockets, sockets.Read, req),
	}
}

// rereadIPTablesEntries reads the iptables section again with nat
// KUBE-SERVICES read rule by rule when a probe of one of the Service's
// frontends failed on this node and the nf_tables reader had established
// the entry rules from reference counts only: those prove which chains are
// jumped to, not the match of the rules that jump, and a failing frontend is
// where the match matters. The probes run concurrently with the read, so this
// is decided after both.
func rereadIPTablesEntries(ctx context.Context, req *collectorapi.Request, opts Options, obs *collectorapi.Observation) {
	ipt, pr := obs.Sections.IPTables, obs.Sections.Probe
	if ipt == nil || ipt.Data == nil || pr == nil || pr.Data == nil {
		return
	}
	byReferences := false
	for _, b := range ipt.Data.Backends {
		byReferences = byReferences || b.EntryProof == collectorapi.IPTablesEntryProofReferences
	}
	failed := failedFrontend(pr.Data)
	if !byReferences || failed == "" {
		return
	}
	// Only a complete second read replaces the first: probes of many
	// unanswering endpoints can use up the collector's time, and a read cut
	// short by that would turn rules that were read into none.
	keep := func(why string) {
		for i := range ipt.Data.Backends {
			if b := &ipt.Data.Backends[i]; b.EntryProof == collectorapi.IPTablesEntryProofReferences {
				b.EntryRereadError = why
			}
		}
	}
	if err := ctx.Err(); err != nil {
		keep("not read again after the probe of " + failed + " failed: " + err.Error())
		return
	}
	q := iptables.Query{Service: req.Service, Endpoints: req.Endpoints, Reader: opts.IPTablesReader, EntryProof: collectorapi.IPTablesEntryProofRules}
	again := collectors.RunSection(ctx, func(ctx context.Context) (*collectorapi.IPTablesObservation, error) { return iptables.Read(ctx, q) })
	if why := incompleteRead(again, ipt.Data); why != "" {
		keep("read again after the probe of " + failed + " failed, incomplete: " + why)
		return
	}
	for i := range again.Data.Backends {
		if b := &again.Data.Backends[i]; b.KubeProxyChains && b.EntryProofFallback == "" {
			b.EntryProofFallback = "the probe of " + failed + " failed"
		}
	}
	again.DurationMillis += ipt.DurationMillis
	obs.Sections.IPTables = again
}

// incompleteRead says why a second read of the iptables section is not
// to replace the first ("" when it may): a section error, a backend with an
// error, or fewer backends than the first read.
func incompleteRead(again *collectorapi.Section[collectorapi.IPTablesObservation], first *collectorapi.IPTablesObservation) string {
	switch {
	case again == nil || again.Data == nil:
		return "no data"
	case again.Error != "":
		return again.Error
	case len(again.Data.Backends) < len(first.Backends):
		return fmt.Sprintf("%d of %d backends", len(again.Data.Backends), len(first.Backends))
	}
	for _, b := range again.Data.Backends {
		if b.Error != "" {
			return b.Backend + " " + b.Family + ": " + b.Error
		}
	}
	return ""
}

// failedFrontend names the first probe of a Service frontend (cluster IP,
// external or load-balancer IP, node port) that failed, "" when none did.
func failedFrontend(p *collectorapi.ProbeObservation) string {
	for _, pr := range p.Probes {
		if pr.Target != "endpoint" && pr.Outcome == probe.OutcomeFailed {
			return pr.Target + " " + pr.Address
		}
	}
	return ""
}
