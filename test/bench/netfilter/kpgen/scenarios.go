package kpgen

import "fmt"

// Scenarios are the doc-derived fixture Services: named and unnamed ports,
// affinity, ETP/ITP Local, NodePort, LoadBalancer with source ranges, no
// endpoints, terminating-only. Node-local endpoints are on 10.244.1.0/24.
func Scenarios() []Service {
	return []Service{
		{Namespace: "default", Name: "web", ClusterIP: "10.96.0.50",
			Ports: []Port{{Name: "http", Protocol: "TCP", Port: 80}},
			Endpoints: []Endpoint{{IP: "10.244.1.5", Port: 8080, Local: true}, {IP: "10.244.2.7", Port: 8080},
				{IP: "10.244.3.9", Port: 8080}, {IP: "10.244.4.4", Port: 8080, Terminating: true}}},
		{Namespace: "default", Name: "sticky", ClusterIP: "10.96.0.51", AffinitySeconds: 10800,
			Ports:     []Port{{Protocol: "TCP", Port: 80}},
			Endpoints: []Endpoint{{IP: "10.244.1.6", Port: 8080, Local: true}, {IP: "10.244.2.8", Port: 8080}}},
		{Namespace: "default", Name: "lb", ClusterIP: "10.96.0.52", LBIPs: []string{"192.0.2.10"},
			SourceRanges: []string{"203.0.113.0/24"}, ETPLocal: true, HealthCheckPort: 32000,
			Ports:     []Port{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30080}},
			Endpoints: []Endpoint{{IP: "10.244.1.7", Port: 80, Local: true}, {IP: "10.244.2.9", Port: 80}}},
		{Namespace: "default", Name: "empty", ClusterIP: "10.96.0.53",
			Ports: []Port{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30081}}},
		{Namespace: "default", Name: "itp", ClusterIP: "10.96.0.54", ITPLocal: true,
			Ports:     []Port{{Name: "dns", Protocol: "UDP", Port: 53}, {Name: "dns-tcp", Protocol: "TCP", Port: 53}},
			Endpoints: []Endpoint{{IP: "10.244.2.10", Port: 53}}},
		{Namespace: "default", Name: "term", ClusterIP: "10.96.0.55",
			Ports:     []Port{{Name: "http", Protocol: "TCP", Port: 80}},
			Endpoints: []Endpoint{{IP: "10.244.1.12", Port: 80, Local: true, Terminating: true}}},
		{Namespace: "default", Name: "extip", ClusterIP: "10.96.0.56", ExternalIPs: []string{"198.51.100.5"}, ETPLocal: true,
			Ports:     []Port{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30082}},
			Endpoints: []Endpoint{{IP: "10.244.2.11", Port: 80}}},
	}
}

// Large is one Service with n endpoints (n > 1000 makes kube-proxy drop
// endpoint comments).
func Large(n int) []Service {
	s := Service{Namespace: "default", Name: "big", ClusterIP: "10.96.1.1",
		Ports: []Port{{Name: "http", Protocol: "TCP", Port: 80}}}
	for i := 0; i < n; i++ {
		s.Endpoints = append(s.Endpoints, Endpoint{IP: fmt.Sprintf("10.245.%d.%d", i/250, i%250+1), Port: 8080})
	}
	return []Service{s}
}

// Bench is n Services with 4 endpoints each, "bench/svc-<i>", ClusterIPs
// from 10.100.0.0/16 and endpoints from 10.200.0.0/14.
func Bench(n int) []Service {
	out := make([]Service, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, BenchService(i))
	}
	return out
}

// BenchService is Service i of Bench.
func BenchService(i int) Service {
	s := Service{Namespace: "bench", Name: fmt.Sprintf("svc-%d", i),
		ClusterIP: fmt.Sprintf("10.100.%d.%d", i/250, i%250+1),
		Ports:     []Port{{Name: "http", Protocol: "TCP", Port: 80}}}
	for j := 0; j < 4; j++ {
		k := i*4 + j
		s.Endpoints = append(s.Endpoints, Endpoint{IP: fmt.Sprintf("10.%d.%d.%d", 200+k/62500, (k/250)%250, k%250+1), Port: 8080})
	}
	return s
}
