package kubeproxy

import (
	"math"
	"strings"
	"testing"
)

// The vectors come from docs/datapath.md §1.2 and §2.2 (kube-proxy v1.37.2
// proxier tests and real clusters).
func TestIPTablesHashVectors(t *testing.T) {
	tests := []struct {
		spn, proto, ep, want string
	}{
		{"ns1/svc1:p80", "TCP", "", "XPGD46QRK7WJZT7O"},
		{"ns1/svc1:p80", "tcp", "10.180.0.1:80", "SXIVWICOYRO3J4NJ"},
		{"default/kubernetes:https", "TCP", "", "NPX46M4PTMTKRN6Y"},
		{"kube-system/kube-dns:dns", "UDP", "", "TCOU7JCQXEZGVUNU"},
		{"kube-system/kube-dns:dns-tcp", "TCP", "", "ERIFXISQEP7F7OF4"},
		{"kube-system/kube-dns:metrics", "TCP", "", "JD5MR3NA4I4DYORP"},
		{"default/sticky", "TCP", "", "BJWR5DPVIKTHVKZU"},
		{"default/web6:http", "TCP", "[fd00:10:244::5]:8080", "WKF22X6YSBZPLUJV"},
	}
	for _, tt := range tests {
		var got string
		if tt.ep == "" {
			got = PortProtoHash(tt.spn, tt.proto)
			c := IPTablesServiceChains(tt.spn, tt.proto)
			if c.Service != "KUBE-SVC-"+tt.want || c.Local != "KUBE-SVL-"+tt.want ||
				c.External != "KUBE-EXT-"+tt.want || c.Firewall != "KUBE-FW-"+tt.want {
				t.Errorf("chains(%q,%q) = %+v", tt.spn, tt.proto, c)
			}
		} else {
			got = strings.TrimPrefix(IPTablesEndpointChain(tt.spn, tt.proto, tt.ep), "KUBE-SEP-")
		}
		if got != tt.want {
			t.Errorf("hash(%q,%q,%q) = %s, want %s", tt.spn, tt.proto, tt.ep, got, tt.want)
		}
	}
}

func TestServicePortNameAndEndpoint(t *testing.T) {
	if got := ServicePortName("default", "web", "http"); got != "default/web:http" {
		t.Errorf("named: %q", got)
	}
	if got := ServicePortName("default", "sticky", ""); got != "default/sticky" {
		t.Errorf("unnamed: %q", got)
	}
	if got := EndpointString("10.180.00.001", 80); got != "10.180.0.1:80" {
		t.Errorf("sloppy: %q", got)
	}
	if got := EndpointString("fd00:10:244::5", 8080); got != "[fd00:10:244::5]:8080" {
		t.Errorf("v6: %q", got)
	}
}

func TestNFTChainNameVectors(t *testing.T) {
	if got := NFTServiceChains("ns1", "svc1", "TCP", "p80").Service; got != "service-ULMVA6XW-ns1/svc1/tcp/p80" {
		t.Errorf("ns1/svc1: %s", got)
	}
	if got := NFTServiceChains("default", "kubernetes", "tcp", "https").Service; got != "service-2QRHZV4L-default/kubernetes/tcp/https" {
		t.Errorf("kubernetes: %s", got)
	}
	c := NFTServiceChains("testing", "service", "tcp", "http")
	if !strings.HasPrefix(c.Base, "P4ZYZVCF-") || c.Local != "local-"+c.Base || c.External != "external-"+c.Base || c.Firewall != "firewall-"+c.Base {
		t.Errorf("testing/service: %+v", c)
	}
	if got := NFTEndpointBase("testing", "service", "tcp", "http", "10.180.0.1", 80); !strings.HasPrefix(got, "JO2XBXZR-") {
		t.Errorf("endpoint v4: %s", got)
	}
	if got := NFTEndpointBase("testing", "service", "tcp", "http", "fd80:abcd:12::a1b2:c3d4:e5f6:9999", 80); got != "U7E2ET36-testing/service/tcp/http__fd80.abcd.12..a1b2.c3d4.e5f6.9999/80" {
		t.Errorf("endpoint v6: %s", got)
	}
	// An EndpointSlice address is re-parsed first, which expands a lone zero group.
	if got := NormalizeIP("fd80:abcd:12::a1b2:c3d4:e5f6:9999"); got != "fd80:abcd:12:0:a1b2:c3d4:e5f6:9999" {
		t.Errorf("normalize v6: %s", got)
	}
	if got := NFTServiceChains("default", "sticky", "TCP", "").Base; !strings.HasPrefix(got, "EDE2N7RF-") || !strings.HasSuffix(got, "default/sticky/tcp/") {
		t.Errorf("unnamed: %s", got)
	}
}

func TestNFTTruncation(t *testing.T) {
	long := strings.Repeat("a", 300)
	b := NFTServiceChains("ns", long, "tcp", "p").Base
	if len(b) != 240 || !strings.HasSuffix(b, "...") {
		t.Errorf("len %d %q", len(b), b[len(b)-5:])
	}
}

func TestProbabilitiesAndShares(t *testing.T) {
	want := map[int]string{2: "0.5000000000", 3: "0.3333333333", 6: "0.1666666667", 7: "0.1428571429"}
	for n, s := range want {
		if got := ComputeProbability(n); got != s {
			t.Errorf("n=%d: %s", n, got)
		}
	}
	// iptables-save's 11-decimal renderings for 4 endpoints.
	p := []float64{0.25, 0.33333333349, 0.5}
	shares := EffectiveShares([]*float64{&p[0], &p[1], &p[2], nil})
	for i, s := range shares {
		if math.Abs(s-0.25) > 1e-9 {
			t.Errorf("share %d = %v", i, s)
		}
	}
	// A broken chain: 0.5, 0.5 and no catch-all leaves 25% unmatched.
	half := 0.5
	shares = EffectiveShares([]*float64{&half, &half})
	if shares[0] != 0.5 || shares[1] != 0.25 {
		t.Errorf("broken shares %v", shares)
	}
}
