package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func bigRequestJSON(t *testing.T, endpoints int) []byte {
	t.Helper()
	req := Request{APIVersion: RequestAPIVersion, Kind: RequestKind, NodeName: "node-1",
		Service: ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{"10.96.0.20"},
			Ports: []ServicePort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "8080"}}}}
	for i := range endpoints {
		ip := fmt.Sprintf("10.%d.%d.%d", 1+i/65536, (i/256)%256, i%256)
		req.Endpoints = append(req.Endpoints, Endpoint{IP: ip, Ports: map[string]int32{"http": 8080}, Ready: true, Serving: true,
			NodeName: fmt.Sprintf("node-%02d", i%50), PodName: fmt.Sprintf("web-%05d", i)})
		req.PodIPs = append(req.PodIPs, ip)
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRequestArgsRoundTrip(t *testing.T) {
	for _, n := range []int{1, 5000, 20000} {
		raw := bigRequestJSON(t, n)
		args, err := RequestArgs(raw)
		if err != nil {
			t.Fatalf("%d endpoints: %v", n, err)
		}
		if len(raw) <= RequestInlineMax {
			if len(args) != 2 || args[0] != "--request" || args[1] != string(raw) {
				t.Fatalf("%d endpoints: small request not inline: %v", n, args[0])
			}
			continue
		}
		var chunks []string
		total := 0
		for i := 0; i < len(args); i += 2 {
			if args[i] != "--request-gz" {
				t.Fatalf("arg %d = %q", i, args[i])
			}
			if len(args[i+1]) > 128<<10-1 {
				t.Fatalf("chunk of %d bytes exceeds MAX_ARG_STRLEN", len(args[i+1]))
			}
			chunks = append(chunks, args[i+1])
			total += len(args[i+1])
		}
		got, err := DecodeRequestChunks(chunks)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, raw) {
			t.Fatalf("%d endpoints: round trip differs", n)
		}
		t.Logf("%d endpoints: %d KiB JSON -> %d KiB in %d argument(s)", n, len(raw)>>10, total>>10, len(chunks))
	}
}

func TestRequestArgsTooLarge(t *testing.T) {
	// Random-looking data does not compress: over the limit, a clear error.
	var b strings.Builder
	x := uint64(1)
	for b.Len() < 2*RequestArgsMax {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		fmt.Fprintf(&b, "%016x", x)
	}
	if _, err := RequestArgs([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("err = %v", err)
	}
}

func TestDecodeRequestChunksRejectsGarbage(t *testing.T) {
	if _, err := DecodeRequestChunks([]string{"not base64!"}); err == nil {
		t.Fatal("garbage accepted")
	}
}
