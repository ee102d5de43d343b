// Package bundle is svctrace's saved-trace format: a directory holding what
// one trace was judged from (the API input and every node's raw
// observations) beside the result it gave. A bundle is versioned
// (apiVersion svctrace.dev/v1alpha1, kind TraceBundle; fields are only ever
// added within it), so a later svctrace can judge an old incident again with
// its own catalog, without a cluster: Analyze feeds the saved input and node
// report to trace.Assemble, the same pure function a live trace goes
// through.
//
// A bundle never holds a Secret object, a token or a kubeconfig: the input
// holds only the objects input.Fetch reads (Service, EndpointSlices, Pods,
// Nodes, NetworkPolicies, kube-dns), and New redacts what in them may carry
// a credential (see Redact).
package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// APIVersion and Kind identify a bundle's manifest.
const (
	APIVersion = "svctrace.dev/v1alpha1"
	Kind       = "TraceBundle"
)

// The files of a bundle directory. The manifest is written last: a
// directory with a manifest holds a complete bundle.
const (
	ManifestFile = "bundle.json"
	InputFile    = "input.json"
	NodesFile    = "nodes.json"
	ResultFile   = "result.json"
)

// Manifest is bundle.json: what the bundle is, which svctrace wrote it, and
// the options the trace was judged with.
type Manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// SvctraceVersion is the svctrace that took the trace.
	SvctraceVersion string `json:"svctraceVersion"`
	// Service is the traced Service.
	Service report.ObjectRef `json:"service"`
	Options Options          `json:"options"`
	// Files lists the bundle's other files; NodesFile is absent when the
	// node layers were not inspected.
	Files []string `json:"files"`
}

// Options are the trace.Options that shape a judgement, as typed by the
// user (the inspector and the clock are not saved; Time stands in for the
// clock).
type Options struct {
	// Time is when the trace was taken; a re-judgement uses it as "now",
	// so ages (a restart five minutes ago) read as they did then.
	Time          time.Time            `json:"time"`
	Port          string               `json:"port,omitempty"`
	ClusterDomain string               `json:"clusterDomain"`
	Context       string               `json:"context,omitempty"`
	NoNode        bool                 `json:"noNode,omitempty"`
	Nodes         []string             `json:"nodes,omitempty"`
	AllNodes      bool                 `json:"allNodes,omitempty"`
	From          *report.PolicyClient `json:"from,omitempty"`
}

// NodeReport is nodes.json: plan.NodeReport with its own stable field
// names. Each node's observation is the collector's NodeObservation
// document, unchanged.
type NodeReport struct {
	Collector *report.CollectorRun `json:"collector,omitempty"`
	Nodes     []NodeView           `json:"nodes,omitempty"`
	// Failure says why no node could be inspected at all.
	Failure string `json:"failure,omitempty"`
}

// NodeView is one node's raw observation, or why there is none.
type NodeView struct {
	Node        string                    `json:"node"`
	Roles       []string                  `json:"roles,omitempty"`
	Profile     string                    `json:"profile,omitempty"`
	Observation *collectorapi.Observation `json:"observation,omitempty"`
	Failure     string                    `json:"failure,omitempty"`
}

// Bundle is one saved trace in memory.
type Bundle struct {
	Manifest Manifest
	Input    *input.Input
	// Report is nil when the node layers were not inspected.
	Report *plan.NodeReport
	// Result is the ServiceTrace the trace printed when it was taken.
	Result *report.ServiceTrace
}

// New builds the bundle of a trace from what trace.Collect returned, the
// options it was judged with and the result. The input is copied and
// redacted (see Redact); the caller's values are not changed.
func New(in *input.Input, nodes *plan.NodeReport, opts trace.Options, result *report.ServiceTrace) (*Bundle, error) {
	saved, err := Redact(in)
	if err != nil {
		return nil, err
	}
	o := Options{
		Time:          result.Metadata.Time,
		Port:          opts.Port,
		ClusterDomain: opts.ClusterDomain,
		Context:       opts.Context,
		NoNode:        opts.NoNode,
		Nodes:         opts.Nodes.Nodes,
		AllNodes:      opts.Nodes.AllNodes,
	}
	if opts.From != nil {
		var from report.PolicyClient
		if err := copyJSON(opts.From, &from); err != nil {
			return nil, err
		}
		if from.Pod != nil {
			redactObject(&from.Pod.ObjectMeta)
			redactPodSpec(&from.Pod.Spec)
		}
		if from.Node != nil {
			redactObject(&from.Node.ObjectMeta)
		}
		o.From = &from
	}
	files := []string{InputFile, ResultFile}
	if nodes != nil {
		files = []string{InputFile, NodesFile, ResultFile}
	}
	return &Bundle{
		Manifest: Manifest{
			APIVersion:      APIVersion,
			Kind:            Kind,
			SvctraceVersion: result.Metadata.SvctraceVersion,
			Service:         report.ObjectRef{Namespace: in.Namespace, Name: in.Name},
			Options:         o,
			Files:           files,
		},
		Input:  saved,
		Report: nodes,
		Result: result,
	}, nil
}

// TraceOptions are the options to judge the bundle with, in the svctrace of
// the given version.
func (b *Bundle) TraceOptions(version string) trace.Options {
	o := b.Manifest.Options
	at := o.Time
	return trace.Options{
		Port:          o.Port,
		ClusterDomain: o.ClusterDomain,
		Version:       version,
		Context:       o.Context,
		Now:           func() time.Time { return at },
		NoNode:        o.NoNode,
		Nodes:         plan.NodeSelection{Nodes: o.Nodes, AllNodes: o.AllNodes},
		From:          o.From,
	}
}

// Analyze judges the bundle again with this build's catalog (version names
// this build in the result's metadata). It reads no cluster.
func (b *Bundle) Analyze(version string) *report.ServiceTrace {
	return trace.Assemble(b.Input, b.Report, b.TraceOptions(version))
}

// Write saves the bundle into dir, creating it (mode 0700: a bundle holds
// cluster data). It refuses a directory that already holds a bundle, so
// evidence is never overwritten.
func (b *Bundle) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create bundle directory: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		return fmt.Errorf("%s already holds a saved trace (%s); choose another directory", dir, ManifestFile)
	}
	if err := writeJSON(filepath.Join(dir, InputFile), b.Input); err != nil {
		return err
	}
	if b.Report != nil {
		if err := writeJSON(filepath.Join(dir, NodesFile), toWire(b.Report)); err != nil {
			return err
		}
	}
	if err := writeJSON(filepath.Join(dir, ResultFile), b.Result); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, ManifestFile), b.Manifest)
}

// IsBundle reports whether path is a directory holding a bundle manifest.
func IsBundle(path string) bool {
	st, err := os.Stat(filepath.Join(path, ManifestFile))
	return err == nil && st.Mode().IsRegular()
}

// Read loads the bundle in dir. It fails on a manifest of another kind or
// apiVersion, and on a missing file the manifest lists.
func Read(dir string) (*Bundle, error) {
	var b Bundle
	if err := readJSON(filepath.Join(dir, ManifestFile), &b.Manifest); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a saved trace: no %s", dir, ManifestFile)
		}
		return nil, err
	}
	if m := b.Manifest; m.APIVersion != APIVersion || m.Kind != Kind {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q, want %s %s (is it from a newer svctrace?)",
			filepath.Join(dir, ManifestFile), m.APIVersion, m.Kind, APIVersion, Kind)
	}
	b.Input = &input.Input{}
	if err := readJSON(filepath.Join(dir, InputFile), b.Input); err != nil {
		return nil, err
	}
	for _, f := range b.Manifest.Files {
		if f != NodesFile {
			continue
		}
		var wire NodeReport
		if err := readJSON(filepath.Join(dir, NodesFile), &wire); err != nil {
			return nil, err
		}
		b.Report = fromWire(&wire)
	}
	b.Result = &report.ServiceTrace{}
	if err := readJSON(filepath.Join(dir, ResultFile), b.Result); err != nil {
		return nil, err
	}
	return &b, nil
}

func toWire(r *plan.NodeReport) NodeReport {
	w := NodeReport{Collector: r.Collector, Failure: r.Failure}
	for _, v := range r.Nodes {
		w.Nodes = append(w.Nodes, NodeView{Node: v.Node, Roles: v.Roles, Profile: v.Profile, Observation: v.Observation, Failure: v.Failure})
	}
	return w
}

func fromWire(w *NodeReport) *plan.NodeReport {
	r := &plan.NodeReport{Collector: w.Collector, Failure: w.Failure}
	for _, v := range w.Nodes {
		r.Nodes = append(r.Nodes, plan.NodeView{Node: v.Node, Roles: v.Roles, Profile: v.Profile, Observation: v.Observation, Failure: v.Failure})
	}
	return r
}

func writeJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("cannot write the saved trace: %w", err)
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func copyJSON(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}
