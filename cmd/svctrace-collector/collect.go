package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/svctrace/kubectl-svctrace/collectors"
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
func Collect(ctx context.Context, req *collectors.Request, opts Options) *collectors.Observation {
	start := time.Now()
	obs := &collectors.Observation{
		APIVersion:  collectors.ObservationAPIVersion,
		Kind:        collectors.ObservationKind,
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
	obs.Collector = collectors.CollectorInfo{
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
	run  func(ctx context.Context, req *collectors.Request, opts Options, out *collectors.Sections)
}

var sectionReaders = []sectionReader{
	{collectors.SectionProxy, func(ctx context.Context, req *collectors.Request, opts Options, out *collectors.Sections) {
		out.Proxy = collectors.RunSection(ctx, func(ctx context.Context) (*collectors.ProxyObservation, error) {
			return proxy.Read(ctx, proxy.Options{
				MetricsAddress: opts.ProxyMetricsAddress,
				HealthzAddress: opts.ProxyHealthzAddress,
				BPFFSRoot:      opts.BPFFSRoot,
			})
		})
	}},
	// iptables and nftables: their readers and result types live in
	// collectors/iptables and collectors/nftables; embedded as JSON.
	{collectors.SectionIPTables, func(ctx context.Context, req *collectors.Request, opts Options, out *collectors.Sections) {
		out.IPTables = rawSection(ctx, func(ctx context.Context) (any, error) {
			return iptables.Read(ctx, iptables.Query{Service: req.Service, Endpoints: req.Endpoints})
		})
	}},
	{collectors.SectionNFTables, func(ctx context.Context, req *collectors.Request, opts Options, out *collectors.Sections) {
		out.NFTables = rawSection(ctx, func(ctx context.Context) (any, error) {
			return nftables.Read(ctx, nftables.Query{Service: req.Service, Endpoints: req.Endpoints})
		})
	}},
	{collectors.SectionIPVS, func(ctx context.Context, req *collectors.Request, opts Options, out *collectors.Sections) {
		out.IPVS = collectors.RunSection(ctx, func(ctx context.Context) (*collectors.IPVSObservation, error) {
			return ipvs.Read(ctx, req)
		})
	}},
	{collectors.SectionEBPF, func(ctx context.Context, req *collectors.Request, opts Options, out *collectors.Sections) {
		out.EBPF = collectors.RunSection(ctx, func(ctx context.Context) (*collectors.EBPFObservation, error) {
			return ebpf.Read(ctx, req, opts.BPFFSRoot)
		})
	}},
	{collectors.SectionConntrack, func(ctx context.Context, req *collectors.Request, opts Options, out *collectors.Sections) {
		out.Conntrack = collectors.RunSection(ctx, func(ctx context.Context) (*collectors.ConntrackObservation, error) {
			return (&conntrack.Reader{FlowCap: opts.FlowCap, Method: opts.ConntrackMethod}).Read(ctx, req)
		})
	}},
	{collectors.SectionRoute, func(ctx context.Context, req *collectors.Request, opts Options, out *collectors.Sections) {
		out.Route = collectors.RunSection(ctx, func(ctx context.Context) (*collectors.RouteObservation, error) {
			return route.Read(ctx, req)
		})
	}},
	{collectors.SectionDNS, func(ctx context.Context, req *collectors.Request, opts Options, out *collectors.Sections) {
		out.DNS = collectors.RunSection(ctx, func(ctx context.Context) (*collectors.DNSObservation, error) {
			return dns.Read(ctx, req)
		})
	}},
	{collectors.SectionProbe, func(ctx context.Context, req *collectors.Request, opts Options, out *collectors.Sections) {
		out.Probe = collectors.RunSection(ctx, func(ctx context.Context) (*collectors.ProbeObservation, error) {
			return probe.Read(ctx, req, opts.ProbeConcurrency)
		})
	}},
	{collectors.SectionSockets, func(ctx context.Context, req *collectors.Request, opts Options, out *collectors.Sections) {
		out.Sockets = collectors.RunSection(ctx, func(ctx context.Context) (*collectors.SocketsObservation, error) {
			return sockets.Read(ctx, req)
		})
	}},
}

// rawSection runs a reader whose result type lives in its own package
// (iptables, nftables) and embeds the result as JSON.
func rawSection(ctx context.Context, read func(context.Context) (any, error)) *collectors.Section[json.RawMessage] {
	return collectors.RunSection(ctx, func(ctx context.Context) (*json.RawMessage, error) {
		data, err := read(ctx)
		if data == nil {
			return nil, err
		}
		b, merr := json.Marshal(data)
		if merr != nil {
			return nil, errors.Join(err, fmt.Errorf("encode: %w", merr))
		}
		raw := json.RawMessage(b)
		return &raw, err
	})
}
