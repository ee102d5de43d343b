package collectors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

func TestParseCapEff(t *testing.T) {
	// NET_ADMIN (12) + NET_RAW (13), what the collector Pod is given.
	c := ParseCapEff("0000000000003000")
	if c.Error != "" || !slices.Equal(c.Effective, []string{"CAP_NET_ADMIN", "CAP_NET_RAW"}) {
		t.Fatalf("got %+v", c)
	}
	if c := ParseCapEff("zz"); c.Error == "" {
		t.Fatal("want an error for a bad mask")
	}
	if c := ParseCapEff("0000000000000000"); len(c.Effective) != 0 {
		t.Fatalf("empty mask gave %v", c.Effective)
	}
}

func TestValidate(t *testing.T) {
	good := Request{APIVersion: RequestAPIVersion, Kind: RequestKind,
		Service: ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{"10.96.0.50"},
			Ports: []ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}},
		Endpoints: []Endpoint{{IP: "10.244.1.5", Ports: map[string]int32{"http": 8080}}}}
	if err := good.Validate(); err != nil {
		t.Fatalf("good request: %v", err)
	}
	headless := good
	headless.Service.ClusterIPs = []string{"None"}
	if err := headless.Validate(); err != nil {
		t.Fatalf("headless: %v", err)
	}
	bad := good
	bad.Service.Ports = []ServicePort{{Protocol: "ICMP", Port: 0}}
	bad.Sections = []string{"nope"}
	if err := bad.Validate(); err == nil {
		t.Fatal("bad request accepted")
	}
	fe := good.Service.Frontends()
	if len(fe) != 1 || fe[0].String() != "10.96.0.50:80/TCP" || fe[0].Kind != "clusterIP" {
		t.Fatalf("frontends %v", fe)
	}
	if eps := good.EndpointAddrs("http"); len(eps) != 1 || eps[0].String() != "10.244.1.5:8080" {
		t.Fatalf("endpoints %v", eps)
	}
}

func TestClassifyNetError(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), ErrClassRefused},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), ErrClassReset},
		{fmt.Errorf("dial: %w", syscall.EHOSTUNREACH), ErrClassUnreachable},
		{context.DeadlineExceeded, ErrClassTimeout},
		{os.ErrDeadlineExceeded, ErrClassTimeout},
		{errors.New("weird"), ErrClassOther},
		{nil, ""},
	}
	for _, c := range cases {
		if got := ClassifyNetError(c.err); got != c.want {
			t.Errorf("%v: got %q want %q", c.err, got, c.want)
		}
	}
}

// TestExampleRequest keeps the documented example request valid.
func TestExampleRequest(t *testing.T) {
	b, err := os.ReadFile("testdata/requests/web.json")
	if err != nil {
		t.Fatal(err)
	}
	var r Request
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	if !r.Wants(SectionConntrack) || r.Domain() != "cluster.local" || len(r.EndpointAddrs("http")) != 2 {
		t.Fatalf("%+v", r)
	}
}

// TestSampleObservationsDecode keeps the recorded observations decodable
// into the current model, with the envelope the plugin checks.
func TestSampleObservationsDecode(t *testing.T) {
	files, _ := filepath.Glob("testdata/observations/*.json")
	if len(files) == 0 {
		t.Fatal("no sample observations")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var o Observation
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if o.APIVersion != ObservationAPIVersion || o.Kind != ObservationKind || o.Service == "" {
			t.Errorf("%s: envelope %s %s %q", f, o.APIVersion, o.Kind, o.Service)
		}
	}
}
