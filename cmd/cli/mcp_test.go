package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/kubectl-svctrace/docs/schema"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakeapi"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// fakeAPIKubeconfig serves default/web (one ready endpoint on node-a) from
// the fake API server and returns a kubeconfig file for it.
func fakeAPIKubeconfig(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(fakeapi.Single("node-a", "10.0.0.1", "10.96.0.20", "10.244.0.5").Handler())
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(fakeapi.Kubeconfig(strings.TrimPrefix(srv.URL, "http://"))), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// realDeps are the production seams (a real clientset over HTTP) with a
// fixed clock and no terminal.
func realDeps() deps {
	d := defaultDeps()
	d.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	d.isTTY = func(io.Writer) bool { return false }
	d.getenv = func(string) string { return "" }
	return d
}

// mcpSession runs `kubectl svctrace mcp ARGS` as the binary would, its
// stdin and stdout joined by in-memory pipes to the SDK's own client, and
// returns the client session.
func mcpSession(t *testing.T, d deps, args ...string) (*mcp.ClientSession, *bytes.Buffer) {
	t.Helper()
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	errOut := &bytes.Buffer{}
	streams := genericiooptions.IOStreams{In: serverIn, Out: serverOut, ErrOut: errOut}
	f := NewTraceFlags()
	f.deps = d
	root := newCmdSvctrace(streams, BuildInfo{Version: "v1.2.3"}, f)
	root.SetArgs(append([]string{"mcp"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "svctrace-test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect: %v (server: %v)", err, errOut)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = clientOut.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("mcp exited with %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("mcp did not stop when its stdin closed")
		}
		cancel()
	})
	return cs, errOut
}

func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var tr report.ServiceTrace
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("not a ServiceTrace: %v\n%s", err, b)
	}
	out, _ := json.Marshal(tr)
	return string(out)
}

// TestMCPTraceServiceEqualsJSON: against the fake API server, the tool's
// structured result equals what `kubectl svctrace web --no-node -o json`
// prints with the same kubeconfig; the tool declares the repository's
// JSON Schema as its output schema.
func TestMCPTraceServiceEqualsJSON(t *testing.T) {
	kubeconfig := fakeAPIKubeconfig(t)
	cs, _ := mcpSession(t, realDeps(), "--kubeconfig", kubeconfig)
	ctx := context.Background()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != MCPToolTraceService {
		t.Fatalf("tools: %+v %v", tools, err)
	}
	var want, got map[string]any
	_ = json.Unmarshal(schema.ServiceTraceV1alpha1, &want)
	b, _ := json.Marshal(tools.Tools[0].OutputSchema)
	_ = json.Unmarshal(b, &got)
	if got["$id"] != want["$id"] || got["title"] != "ServiceTrace" {
		t.Errorf("output schema is not the ServiceTrace schema: %.200s", b)
	}
	in, _ := json.Marshal(tools.Tools[0].InputSchema)
	for _, arg := range []string{"namespace", "service", "port", "from", "nodes", "no_node"} {
		if !strings.Contains(string(in), `"`+arg+`"`) {
			t.Errorf("input schema lacks %s: %s", arg, in)
		}
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: MCPToolTraceService,
		Arguments: map[string]any{"service": "web", "no_node": true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %+v", res.Content)
	}

	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	f := NewTraceFlags()
	f.deps = realDeps()
	root := newCmdSvctrace(streams, BuildInfo{Version: "v1.2.3"}, f)
	root.SetArgs([]string{"web", "--no-node", "-o", "json", "--kubeconfig", kubeconfig})
	err = root.ExecuteContext(ctx)
	if code := ExitCode(err); code == ExitError || code == ExitUsage {
		t.Fatalf("CLI: %v", err)
	}
	var cli any
	_ = json.Unmarshal(out.Bytes(), &cli)
	if g, w := canonical(t, res.StructuredContent), canonical(t, cli); g != w {
		t.Errorf("MCP result differs from -o json:\nmcp: %s\ncli: %s", g, w)
	}
	var tr report.ServiceTrace
	_ = json.Unmarshal([]byte(canonical(t, res.StructuredContent)), &tr)
	if !tr.Service.Found || tr.Endpoints.Ready != 1 || tr.Metadata.Context != "fake" {
		t.Errorf("the trace did not read the fake API: %+v %+v", tr.Service, tr.Metadata)
	}
}

// TestMCPErrorsAndResources: a trace that cannot run is a tool error, a
// failing one is a result; the catalog and the schema are resources.
func TestMCPErrorsAndResources(t *testing.T) {
	cs, _ := mcpSession(t, realDeps(), "--kubeconfig", fakeAPIKubeconfig(t))
	ctx := context.Background()
	for _, tt := range []struct {
		args    map[string]any
		isError bool
		verdict report.Status
		msg     string
	}{
		{args: map[string]any{"service": "nope", "no_node": true}, verdict: report.StatusFail},
		{args: map[string]any{"service": "web", "port": "grpc", "no_node": true}, isError: true, msg: "matches no port"},
		{args: map[string]any{"service": "deploy/web", "no_node": true}, isError: true, msg: "is not a Service"},
		{args: map[string]any{"service": "web", "namespace": "Bad_NS", "no_node": true}, isError: true, msg: "invalid namespace"},
		{args: map[string]any{"no_node": true}, isError: true, msg: "service"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: MCPToolTraceService, Arguments: tt.args})
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if res.IsError != tt.isError || !strings.Contains(text, tt.msg) {
			t.Errorf("%v: isError %v %q, want %v %q", tt.args, res.IsError, text, tt.isError, tt.msg)
		}
		if !tt.isError {
			var tr report.ServiceTrace
			_ = json.Unmarshal([]byte(canonical(t, res.StructuredContent)), &tr)
			if tr.Verdict.Status != tt.verdict {
				t.Errorf("%v: verdict %s, want %s", tt.args, tr.Verdict.Status, tt.verdict)
			}
		}
	}

	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: MCPCatalogURI})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("catalog: %+v %v", res, err)
	}
	var entries []catalogEntry
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &entries); err != nil || len(entries) != len(report.CatalogCodes()) {
		t.Fatalf("catalog has %d entries (%v), want %d", len(entries), err, len(report.CatalogCodes()))
	}
	if e := entries[0]; e.Code == "" || e.Title == "" || e.Message == "" || e.Severity == "" {
		t.Errorf("catalog entry %+v", e)
	}
	res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: MCPSchemaURI})
	if err != nil || res.Contents[0].Text != string(schema.ServiceTraceV1alpha1) {
		t.Errorf("schema resource: %v", err)
	}
}

// slowInspector counts the inspections running at once.
type slowInspector struct {
	running, max atomic.Int32
	calls        atomic.Int32
}

func (s *slowInspector) Inspect(ctx context.Context, _ plan.NodePlan) (*plan.NodeReport, error) {
	n := s.running.Add(1)
	defer s.running.Add(-1)
	for {
		m := s.max.Load()
		if n <= m || s.max.CompareAndSwap(m, n) {
			break
		}
	}
	s.calls.Add(1)
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &plan.NodeReport{Failure: "test inspector"}, nil
}

// TestMCPOneTraceOfCollectorsAtATime: concurrent calls that run collectors
// inspect one after the other; every call still gets its result.
func TestMCPOneTraceOfCollectorsAtATime(t *testing.T) {
	d := realDeps()
	insp := &slowInspector{}
	d.inspector = insp
	cs, _ := mcpSession(t, d, "--kubeconfig", fakeAPIKubeconfig(t))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: MCPToolTraceService,
				Arguments: map[string]any{"service": "web"}})
			if err == nil && res.IsError {
				err = io.ErrUnexpectedEOF
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if insp.calls.Load() != 4 || insp.max.Load() != 1 {
		t.Errorf("%d inspections, at most %d at once; want 4, 1", insp.calls.Load(), insp.max.Load())
	}
}
