package probe

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/loopback"
)

func TestTargets(t *testing.T) {
	req := &collectorapi.Request{
		Service: collectorapi.ServiceSpec{ClusterIPs: []string{"10.96.0.50", "fd00::50"}, ExternalIPs: []string{"192.0.2.9"},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}, {Name: "dns", Protocol: "UDP", Port: 53}}},
		Endpoints: []collectorapi.Endpoint{
			{IP: "10.244.1.5", Ports: map[string]int32{"http": 8080, "dns": 53}},
			{IP: "10.244.1.5", Ports: map[string]int32{"http": 8080}}, // duplicate
		},
	}
	var got []string
	targets, total := Targets(req)
	for _, tg := range targets {
		got = append(got, tg.Kind+" "+tg.Addr.String()+"/"+tg.Protocol)
	}
	if total != 2 {
		t.Errorf("endpoints total %d, want 2 (one per port)", total)
	}
	want := []string{
		"clusterIP 10.96.0.50:80/TCP", "clusterIP 10.96.0.50:53/UDP",
		"clusterIP [fd00::50]:80/TCP", "clusterIP [fd00::50]:53/UDP",
		"externalIP 192.0.2.9:80/TCP", "externalIP 192.0.2.9:53/UDP",
		"endpoint 10.244.1.5:8080/TCP", "endpoint 10.244.1.5:53/UDP",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("[%d] %q want %q", i, got[i], want[i])
		}
	}
}

// TestTargetsLimitEndpoints: above the limit, this node's endpoints come
// first, then ready ones; the total still counts every endpoint.
func TestTargetsLimitEndpoints(t *testing.T) {
	req := &collectorapi.Request{NodeName: "n2", EndpointProbeLimit: 3,
		Service: collectorapi.ServiceSpec{ClusterIPs: []string{"10.96.0.50"},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}}}
	for i := range 200 {
		req.Endpoints = append(req.Endpoints, collectorapi.Endpoint{IP: "10.244.0." + strconv.Itoa(i),
			Ports: map[string]int32{"http": 8080}, Ready: i%2 == 1, NodeName: map[bool]string{true: "n2", false: "n1"}[i%50 == 0]})
	}
	targets, total := Targets(req)
	var got []string
	for _, tg := range targets {
		if tg.Kind == "endpoint" {
			got = append(got, tg.Addr.Addr().String())
		}
	}
	// n2 holds .0, .50, .100, .150 (not ready: local first anyway), then ready .1.
	if want := []string{"10.244.0.0", "10.244.0.50", "10.244.0.100"}; !slices.Equal(got, want) {
		t.Errorf("probed %v, want %v", got, want)
	}
	if total != 200 {
		t.Errorf("total %d, want 200", total)
	}
	req.NodeName = "n3"
	targets, _ = Targets(req)
	got = got[:0]
	for _, tg := range targets {
		if tg.Kind == "endpoint" {
			got = append(got, tg.Addr.Addr().String())
		}
	}
	if want := []string{"10.244.0.1", "10.244.0.3", "10.244.0.5"}; !slices.Equal(got, want) {
		t.Errorf("no local endpoint: probed %v, want the first ready ones %v", got, want)
	}
}

// TestOneOnLoopback probes live and closed TCP/UDP ports on 127.0.0.1.
func TestOneOnLoopback(t *testing.T) {
	tcp := loopback.AcceptTCP(t)
	echo, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := echo.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = echo.WriteTo(buf[:n+1], from)
		}
	}()
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	ap := func(port int) netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:" + strconv.Itoa(port)) }
	cases := []struct {
		name           string
		target         Target
		outcome, class string
	}{
		{"tcp open", Target{Kind: "endpoint", Addr: ap(tcp), Protocol: "TCP"}, OutcomeConnected, ""},
		{"tcp closed", Target{Kind: "endpoint", Addr: ap(loopback.FreePort(t, "tcp")), Protocol: "TCP"}, OutcomeFailed, collectorapi.ErrClassRefused},
		{"udp echo", Target{Kind: "endpoint", Addr: ap(echo.LocalAddr().(*net.UDPAddr).Port), Protocol: "UDP"}, OutcomeReply, ""},
		{"udp closed", Target{Kind: "endpoint", Addr: ap(loopback.FreePort(t, "udp")), Protocol: "UDP"}, OutcomeFailed, collectorapi.ErrClassRefused},
		{"udp silent", Target{Kind: "endpoint", Addr: ap(silent.LocalAddr().(*net.UDPAddr).Port), Protocol: "UDP"}, OutcomeNoReply, collectorapi.ErrClassTimeout},
		{"sctp", Target{Kind: "endpoint", Addr: ap(1), Protocol: "SCTP"}, OutcomeSkipped, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := One(context.Background(), c.target, 300*time.Millisecond)
			if p.Outcome != c.outcome || p.ErrorClass != c.class {
				t.Fatalf("got outcome %q class %q (error %q), want %q %q", p.Outcome, p.ErrorClass, p.Error, c.outcome, c.class)
			}
			if p.Address != c.target.Addr.String() {
				t.Errorf("address %q", p.Address)
			}
		})
	}
}

func TestReadBoundsAndOrders(t *testing.T) {
	port := loopback.AcceptTCP(t)
	closed := loopback.FreePort(t, "tcp")
	req := &collectorapi.Request{
		Service:            collectorapi.ServiceSpec{ClusterIPs: []string{"127.0.0.1"}, Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(port)}}},
		Endpoints:          []collectorapi.Endpoint{{IP: "127.0.0.2", Ports: map[string]int32{"http": int32(closed)}}},
		ProbeTimeoutMillis: 500,
	}
	obs, err := Read(context.Background(), req, 1)
	if err != nil {
		t.Fatal(err)
	}
	if obs.TimeoutMillis != 500 || obs.Concurrency != 1 || len(obs.Probes) != 2 {
		t.Fatalf("%+v", obs)
	}
	if obs.Probes[0].Target != "clusterIP" || obs.Probes[0].Outcome != OutcomeConnected {
		t.Errorf("clusterIP probe %+v", obs.Probes[0])
	}
	if obs.Probes[1].Target != "endpoint" || obs.Probes[1].ErrorClass != collectorapi.ErrClassRefused {
		t.Errorf("endpoint probe %+v", obs.Probes[1])
	}
}

// TestNodePortTargets: every NodePort is probed at each node address the
// request names, labelled with the node.
func TestNodePortTargets(t *testing.T) {
	req := &collectorapi.Request{NodeName: "n1",
		Service: collectorapi.ServiceSpec{ClusterIPs: []string{"10.96.0.50"},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30080}, {Name: "admin", Protocol: "TCP", Port: 9000}}},
		NodeAddresses: []collectorapi.NodeAddress{{Node: "n1", IP: "10.0.0.11"}, {Node: "n2", IP: "10.0.0.12"}},
	}
	var got []string
	targets, _ := Targets(req)
	for _, tg := range targets {
		if tg.Kind == "nodePort" {
			got = append(got, tg.Node+" "+tg.Addr.String())
		}
	}
	if !slices.Equal(got, []string{"n1 10.0.0.11:30080", "n2 10.0.0.12:30080"}) {
		t.Errorf("nodePort targets %v", got)
	}
}

// TestHealthCheckDecodesKubeProxyAnswer: the body kube-proxy's service health
// server writes (pkg/proxy/healthcheck/service_health.go), 503 with no local
// endpoint, is decoded; nothing listening is a refusal.
func TestHealthCheckDecodesKubeProxyAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("{\n\t\"service\": {\n\t\t\"namespace\": \"default\",\n\t\t\"name\": \"web\"\n\t},\n\t\"localEndpoints\": 0,\n\t\"serviceProxyHealthy\": true\n}"))
	})}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	hc := HealthCheck(context.Background(), netip.MustParseAddrPort(l.Addr().String()), time.Second)
	if hc.StatusCode != 503 || hc.LocalEndpoints == nil || *hc.LocalEndpoints != 0 || hc.ServiceProxyHealthy == nil || !*hc.ServiceProxyHealthy {
		t.Errorf("%+v", hc)
	}
	addr := l.Addr().String()
	srv.Close()
	hc = HealthCheck(context.Background(), netip.MustParseAddrPort(addr), time.Second)
	if hc.ErrorClass != collectorapi.ErrClassRefused {
		t.Errorf("closed port: %+v", hc)
	}
}

// TestHealthCheckAddrs: the health check is asked once per family of the
// Service, at this node's address of that family, else that family's
// loopback; another node's address is never asked.
func TestHealthCheckAddrs(t *testing.T) {
	addrs := []collectorapi.NodeAddress{{Node: "n2", IP: "10.0.0.12"}, {Node: "n1", IP: "10.0.0.11"}, {Node: "n1", IP: "fd00::11"}}
	for _, tt := range []struct {
		name       string
		clusterIPs []string
		nodeAddrs  []collectorapi.NodeAddress
		port       int32
		want       string
	}{
		{"no health-check port", []string{"10.96.0.20"}, addrs, 0, ""},
		{"IPv4 only", []string{"10.96.0.20"}, addrs, 30999, "10.0.0.11:30999"},
		{"dual-stack, IPv6 first", []string{"fd00:96::20", "10.96.0.20"}, addrs, 30999, "[fd00::11]:30999 10.0.0.11:30999"},
		{"dual-stack, no node IPv6 address", []string{"10.96.0.20", "fd00:96::20"}, addrs[:2], 30999, "10.0.0.11:30999 [::1]:30999"},
		{"no node address at all", nil, nil, 30999, "127.0.0.1:30999"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := &collectorapi.Request{NodeName: "n1", NodeAddresses: tt.nodeAddrs,
				Service: collectorapi.ServiceSpec{ClusterIPs: tt.clusterIPs, HealthCheckNodePort: tt.port}}
			var got []string
			for _, a := range healthCheckAddrs(req) {
				got = append(got, a.String())
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("got %q, want %q", g, tt.want)
			}
		})
	}
}
