package netpol

import (
	"fmt"
	"net/netip"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// benchInput is 5,000 backend Pods in 10 label groups and 20 policies of
// the usual shapes: a default deny, per-group allows by podSelector,
// namespaceSelector, both, ipBlock with except, named ports and ranges, so
// that every Pod is selected by several policies and most rules are walked.
func benchInput(client Client) *Input {
	in := &Input{
		Ports: []TargetPort{
			{Name: "http", Port: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
			{Name: "metrics", Port: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
		},
		NamespaceLabels: map[string]map[string]string{"shop": {"team": "shop"}, "web": {"team": "web"}},
		Client:          client,
	}
	for i := range 5000 {
		in.Backends = append(in.Backends, mkPod("shop", fmt.Sprintf("web-%d", i),
			map[string]string{"app": "web", "group": fmt.Sprint(i % 10), "pod-template-hash": "abc"},
			fmt.Sprintf("10.%d.%d.%d", 1+i/65536, (i/256)%256, i%256),
			cport{"http", 8080, ""}, cport{"metrics", 9090, ""}))
	}
	in.Policies = append(in.Policies, mkPol("shop", "deny-all", &metav1.LabelSelector{}, types(ingressT)))
	for g := range 19 {
		var r networkingv1.NetworkPolicyIngressRule
		switch g % 4 {
		case 0:
			r = ing(ports(named("http")), podPeer(sel("app", "nothing", "n", fmt.Sprint(g))))
		case 1:
			r = ing(ports(rng(9000, 9100)), nsPeer(sel("team", "other")))
		case 2:
			r = ing(ports(tcp(8080), proto(corev1.ProtocolUDP, 8080)), bothPeer(sel("app", "admin"), sel("team", "web")))
		case 3:
			r = ing(nil, ipPeer("172.16.0.0/12", "172.16.1.0/24"))
		}
		in.Policies = append(in.Policies, mkPol("shop", fmt.Sprintf("p%d", g), sel("group", fmt.Sprint(g%10)), ingress(r, r)))
	}
	return in
}

// BenchmarkEvaluate is 5,000 backend Pods × 2 Service ports (1 in
// pod-denied-1port) × 20 NetworkPolicies (every Pod selected by the default deny and two or three
// others), for a denied Pod client, an admitted Pod client with egress
// policies, and AnyClient.
func BenchmarkEvaluate(b *testing.B) {
	clients := map[string]Client{
		"pod-denied": feWeb,
		"node":       {Kind: ClientNode, Name: "w1", IPs: []netip.Addr{netip.MustParseAddr("172.16.5.1")}},
		"any":        AnyClient(),
	}
	for name, c := range clients {
		in := benchInput(c)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := startCPU()
			for b.Loop() {
				res := Evaluate(in)
				if len(res.Decisions) != 10000 {
					b.Fatalf("%d decisions", len(res.Decisions))
				}
			}
			cpu.report(b)
		})
	}
	// Exactly the brief's shape: one Service port.
	one := benchInput(feWeb)
	one.Ports = one.Ports[:1]
	b.Run("pod-denied-1port", func(b *testing.B) {
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			if res := Evaluate(one); len(res.Decisions) != 5000 {
				b.Fatalf("%d decisions", len(res.Decisions))
			}
		}
		cpu.report(b)
	})
	in := benchInput(feWeb)
	in.Policies = append(in.Policies,
		mkPol("web", "egress", sel("app", "frontend"), types(egressT),
			egress(egr(ports(named("http")), bothPeer(sel("app", "web"), sel("team", "shop"))))))
	in.Policies[1] = mkPol("shop", "allow-web", &metav1.LabelSelector{}, ingress(ing(ports(named("http")), nsPeer(sel("team", "web")))))
	b.Run("pod-allowed-with-egress", func(b *testing.B) {
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			res := Evaluate(in)
			if res.Summary.Allowed != 5000 {
				b.Fatalf("allowed %d: %s", res.Summary.Allowed, res.Summary.Line)
			}
		}
		cpu.report(b)
	})
}

// cpuClock reads the process's user+system CPU time (GC workers included),
// so that the figure stays meaningful on a machine whose other processes
// inflate wall-clock ns/op.
type cpuClock time.Duration

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock(processCPU()) }

// report adds cpu-ms/op: process CPU time per Evaluate.
func (c cpuClock) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-time.Duration(c))/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}
