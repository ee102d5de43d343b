package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

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

// TestExampleRequest keeps the documented example request valid.
func TestExampleRequest(t *testing.T) {
	b, err := os.ReadFile("../../testdata/requests/web.json")
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
	files, _ := filepath.Glob("../../testdata/observations/*.json")
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

// TestSampleObservationsRoundTrip keeps every field of the recorded
// observations, the iptables and nftables sections included, in the model:
// decoding one and encoding it again gives back each recorded field with its
// name and value. Fields added since the recording may appear on top.
func TestSampleObservationsRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/observations/*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var o Observation
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		again, err := json.Marshal(&o)
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(again, &got); err != nil {
			t.Fatal(err)
		}
		if d := jsonDiff("", got, want); d != "" {
			t.Errorf("%s does not survive a decode and encode: %s", f, d)
		}
	}
}

// jsonDiff names the first place where want (a decoded JSON document) has
// something got lacks or holds differently; keys only got has are ignored.
func jsonDiff(path string, got, want any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %v, want an object", path, got)
		}
		keys := slices.Sorted(maps.Keys(w))
		for _, k := range keys {
			if _, ok := g[k]; !ok {
				return fmt.Sprintf("%s.%s: missing (want %v)", path, k, w[k])
			}
			if d := jsonDiff(path+"."+k, g[k], w[k]); d != "" {
				return d
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: got %v, want %v", path, got, want)
		}
		for i := range w {
			if d := jsonDiff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i]); d != "" {
				return d
			}
		}
	default:
		if !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("%s: got %v, want %v", path, got, want)
		}
	}
	return ""
}
