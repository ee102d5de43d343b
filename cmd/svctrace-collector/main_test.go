package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/collectors"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

const minimalRequest = `{"apiVersion":"svctrace.dev/v1alpha1","kind":"CollectRequest",
 "service":{"namespace":"default","name":"web","type":"ClusterIP","clusterIPs":["127.0.0.1"],
  "ports":[{"name":"http","protocol":"TCP","port":1}]},
 "sections":[%s]}`

func req(sections string) string { return strings.Replace(minimalRequest, "%s", sections, 1) }

func TestRunBadRequestExits2(t *testing.T) {
	cases := map[string][]string{
		"not json":        {"--request", "{"},
		"wrong kind":      {"--request", `{"apiVersion":"svctrace.dev/v1alpha1","kind":"Nope","service":{"namespace":"a","name":"b"}}`},
		"unknown section": {"--request", req(`"bogus"`)},
		"unknown field":   {"--request", `{"apiVersion":"svctrace.dev/v1alpha1","kind":"CollectRequest","service":{"namespace":"a","name":"b"},"extra":1}`},
		"bad flag":        {"--no-such-flag"},
		"both sources":    {"--request", req(`"probe"`), "--request-file", "x"},
		"bad clusterIP":   {"--request", strings.Replace(req(`"probe"`), "127.0.0.1", "300.1.1.1", 1)},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
			if code != exitBadRequest {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitBadRequest, errOut.String())
			}
			if out.Len() != 0 {
				t.Fatalf("stdout not empty on a bad request: %q", out.String())
			}
		})
	}
}

// TestRunSelectsSections checks that only requested sections appear, that the
// envelope is versioned, and that the request can come from each source.
func TestRunSelectsSections(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "req.json")
	if err := os.WriteFile(file, []byte(req(`"route"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	sources := map[string]struct {
		args  []string
		stdin string
	}{
		"inline": {[]string{"--request", req(`"route"`)}, ""},
		"file":   {[]string{"--request-file", file}, ""},
		"stdin":  {nil, req(`"route"`)},
		"gz":     {gzArgs(t, req(`"route"`)), ""},
		// What the plugin sends a node agent: the request gzipped on stdin.
		"stdin gzipped": {[]string{"--request-file", "-"}, gzipped(t, req(`"route"`))},
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(context.Background(), src.args, strings.NewReader(src.stdin), &out, &errOut); code != 0 {
				t.Fatalf("exit %d; stderr %q", code, errOut.String())
			}
			if n := strings.Count(strings.TrimSpace(out.String()), "\n"); n != 0 {
				t.Fatalf("want exactly one JSON line, got %d newlines", n)
			}
			var obs collectorapi.Observation
			if err := json.Unmarshal(out.Bytes(), &obs); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if obs.APIVersion != collectorapi.ObservationAPIVersion || obs.Kind != collectorapi.ObservationKind {
				t.Fatalf("envelope %s/%s", obs.APIVersion, obs.Kind)
			}
			if obs.Service != "default/web" {
				t.Fatalf("service %q", obs.Service)
			}
			if obs.Sections.Route == nil {
				t.Fatal("route section missing")
			}
			if obs.Sections.Probe != nil || obs.Sections.Conntrack != nil || obs.Sections.Proxy != nil {
				t.Fatal("sections that were not requested are present")
			}
			if obs.Collector.Resources.PeakRSSSelfKiB <= 0 {
				t.Fatalf("peak RSS not measured: %+v", obs.Collector.Resources)
			}
			if obs.Collector.Capabilities.EffectiveHex == "" {
				t.Fatalf("capabilities not read: %+v", obs.Collector.Capabilities)
			}
		})
	}
}

// TestFailingSectionDoesNotHideOthers runs a panicking reader next to a
// working one through RunSection.
func TestFailingSectionDoesNotHideOthers(t *testing.T) {
	ctx := context.Background()
	bad := collectors.RunSection(ctx, func(context.Context) (*collectorapi.RouteObservation, error) {
		panic("boom")
	})
	good := collectors.RunSection(ctx, func(context.Context) (*collectorapi.DNSObservation, error) {
		return &collectorapi.DNSObservation{Servers: []string{"10.96.0.10"}}, nil
	})
	unavailable := collectors.RunSection(ctx, func(context.Context) (*collectorapi.IPVSObservation, error) {
		return &collectorapi.IPVSObservation{}, collectors.Unavailable("ipvs not available in this kernel")
	})
	if bad.Status != collectorapi.StatusError || !strings.Contains(bad.Error, "boom") {
		t.Fatalf("panicking section: %+v", bad)
	}
	if good.Status != collectorapi.StatusOK || good.Data == nil || good.Data.Servers[0] != "10.96.0.10" {
		t.Fatalf("good section: %+v", good)
	}
	if unavailable.Status != collectorapi.StatusUnavailable || unavailable.Error != "ipvs not available in this kernel" {
		t.Fatalf("unavailable section: %+v", unavailable)
	}
}

// gzArgs encodes a request as collectorapi.RequestArgs does for large ones,
// split into two --request-gz chunks to check they are joined in order.
func gzArgs(t *testing.T, request string) []string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	enc := base64.StdEncoding.EncodeToString(buf.Bytes())
	return []string{"--request-gz", enc[:len(enc)/2], "--request-gz", enc[len(enc)/2:]}
}

func gzipped(t *testing.T, s string) string {
	t.Helper()
	b, err := collectorapi.GzipRequest([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
