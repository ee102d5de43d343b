package main

import (
	"bytes"
	"context"
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
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// Collect runs every requested section concurrently and assembles the
// observation. Sections never fail the run: each one records its own error.
func Collect(ctx context.Context, req *collectorapi.Request, opts Options) *collectorapi.Observation {
	start := time.Now()
	obs := &collectorapi.Observation{
		APIVersion:  collectorapi.ObservationAPIVersion,
		Kind:        collectorapi.ObservationKind,
		NodeName:    req.NodeName,
		Service:     req.ServiceKey(),
		CollectedAt: start.UTC(),
	}
	obs.Hostname, _ = os.Hostname()

	var wg sync.WaitGroup
	for _, s := range sectionReaders {
		if !req.Wants(s.name) {
			continue
		}
		wg.Go(func() { s.run(ctx, req, opts, &obs.Sections) })
	}
	wg.Wait()

	obs.DurationMillis = collectors.Millis(time.Since(start))
	obs.Collector = collectorapi.CollectorInfo{
		Version:      version,
		GoVersion:    runtime.Version(),
		Capabilities: collectors.ReadCapabilities(),
		Resources:    collectors.ReadResources(),
	}
	return obs
}

// sectionReader wires one section name to its reader. Each run writes only
// its own field of Sections, so concurrent runs do not race.
type sectionReader struct {
	name string
	run  func(ctx context.Context, req *collectorapi.Request, opts Options, out *collectorapi.Sections)
}

var sectionReaders = []sectionReader{
	{collectorapi.SectionProxy, func(ctx context.Context, req *collectorapi.Request, opts Options, out *collectorapi.Sections) {
		out.Proxy = collectors.RunSection(ctx, func(ctx context.Context) (*collectorapi.ProxyObservation, error) {
			return proxy.Read(ctx, proxy.Options{
				MetricsAddress: opts.ProxyMetricsAddress,
				HealthzAddress: opts.ProxyHealthzAddress,
				BPFFSRoot:      opts.BPFFSRoot,
			})
		})
	}},
	{collectorapi.SectionIPTables, func(ctx context.Context, req *collectorapi.Request, opts Options, out *collectorapi.Sections) {
		out.IPTables = collectors.RunSection(ctx, func(ctx context.Context) (*collectorapi.IPTablesObservation, error) {
			return iptables.Read(ctx, iptables.Query{Service: req.Service, Endpoints: req.Endpoints})
		})
	}},
	{collectorapi.SectionNFTables, func(ctx context.Context, req *collectorapi.Request, opts Options, out *collectorapi.Sections) {
		out.NFTables = collectors.RunSection(ctx, func(ctx context.Context) (*collectorapi.NFTablesObservation, error) {
			return nftables.Read(ctx, nftables.Query{Service: req.Service, Endpoints: req.Endpoints})
		})
	}},
	{collectorapi.SectionIPVS, func(ctx context.Context, req *collectorapi.Request, opts Options, out *collectorapi.Sections) {
		out.IPVS = collectors.RunSection(ctx, func(ctx context.Context) (*collectorapi.IPVSObservation, error) {
			return ipvs.Read(ctx, req)
		})
	}},
	{collectorapi.SectionEBPF, func(ctx context.Context, req *collectorapi.Request, opts Options, out *collectorapi.Sections) {
		out.EBPF = collectors.RunSection(ctx, func(ctx context.Context) (*collectorapi.EBPFObservation, error) {
			return ebpf.Read(ctx, req, opts.BPFFSRoot)
		})
	}},
	{collectorapi.SectionConntrack, func(ctx context.Context, req *collectorapi.Request, opts Options, out *collectorapi.Sections) {
		out.Conntrack = collectors.RunSection(ctx, func(ctx context.Context) (*collectorapi.ConntrackObservation, error) {
			return (&conntrack.Reader{FlowCap: opts.FlowCap, Method: opts.ConntrackMethod}).Read(ctx, req)
		})
	}},
	{collectorapi.SectionRoute, func(ctx context.Context, req *collectorapi.Request, opts Options, out *collectorapi.Sections) {
		out.Route = collectors.RunSection(ctx, func(ctx context.Context) (*collectorapi.RouteObservation, error) {
			return route.Read(ctx, req)
		})
	}},
	{collectorapi.SectionDNS, func(ctx context.Context, req *collectorapi.Request, opts Options, out *collectorapi.Sections) {
		out.DNS = collectors.RunSection(ctx, func(ctx context.Context) (*collectorapi.DNSObservation, error) {
			return dns.Read(ctx, req)
		})
	}},
	{collectorapi.SectionProbe, func(ctx context.Context, req *collectorapi.Request, opts Options, out *collectorapi.Sections) {
		out.Probe = collectors.RunSection(ctx, func(ctx context.Context) (*collectorapi.ProbeObservation, error) {
			return probe.Read(ctx, req, opts.ProbeConcurrency)
		})
	}},
	{collectorapi.SectionSockets, func(ctx context.Context, req *collectorapi.Request, opts Options, out *collectorapi.Sections) {
		out.Sockets = collectors.RunSection(ctx, func(ctx context.Context) (*collectorapi.SocketsObservation, error) {
			return sockets.Read(ctx, req)
		})
	}},
}
