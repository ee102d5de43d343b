package trace

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// replace swaps the object of the same kind and name in objs.
func replace(objs []runtime.Object, repl ...runtime.Object) []runtime.Object {
	out := append([]runtime.Object(nil), objs...)
	for _, r := range repl {
		rm := r.(metav1.Object)
		found := false
		for i, o := range out {
			om := o.(metav1.Object)
			if om.GetName() == rm.GetName() && om.GetNamespace() == rm.GetNamespace() &&
				strings.Contains(typeName(o), typeName(r)) {
				out[i] = r
				found = true
			}
		}
		if !found {
			out = append(out, r)
		}
	}
	return out
}

func typeName(o runtime.Object) string {
	switch o.(type) {
	case *corev1.Service:
		return "svc"
	case *corev1.Pod:
		return "pod"
	case *discoveryv1.EndpointSlice:
		return "eps"
	case *corev1.Node:
		return "node"
	}
	return "other"
}

func without(objs []runtime.Object, kind, name string) []runtime.Object {
	var out []runtime.Object
	for _, o := range objs {
		if typeName(o) == kind && o.(metav1.Object).GetName() == name {
			continue
		}
		out = append(out, o)
	}
	return out
}

type reactor struct {
	verb, resource string
	err            error
}

func forbidden(verb, resource string) reactor {
	gr := schema.GroupResource{Resource: resource}
	if resource == "endpointslices" {
		gr.Group = "discovery.k8s.io"
	}
	return reactor{verb, resource, apierrors.NewForbidden(gr, "", nil)}
}

func runTrace(t *testing.T, objs []runtime.Object, opts Options, reactors ...reactor) (*report.ServiceTrace, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	for _, r := range reactors {
		r := r
		client.PrependReactor(r.verb, r.resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, r.err
		})
	}
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	tr, err := Run(context.Background(), client, "default", "web", opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	assertCatalogued(t, tr)
	return tr, client
}

func codes(tr *report.ServiceTrace, layer report.LayerName) map[string]report.Check {
	out := map[string]report.Check{}
	for _, c := range tr.Layer(layer).Checks {
		out[c.Code] = c
	}
	return out
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name      string
		objs      []runtime.Object
		opts      Options
		reactors  []reactor
		layer     report.LayerName
		want      string // code that must be present
		absent    []string
		status    report.Status // want status of layer
		verdict   report.Status
		contains  string // substring of the check's message
		firstFail report.LayerName
	}{
		{name: "healthy", objs: healthy(), layer: report.LayerEndpoints, want: report.CodeEpsCounts, status: report.StatusPass,
			absent:  []string{report.CodeEpsNoReady, report.CodeEpsReadyPodMissing, report.CodeEpsGhostIP, report.CodeEpsPodGone, report.CodePortNumeric + "x"},
			verdict: report.StatusPass, contains: "2 ready"},
		{name: "numeric targetPort never warns", objs: replace(healthy(), pod("web-1", "web", "10.244.1.5", "node-a", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = nil
		})), layer: report.LayerService, want: report.CodePortNumeric, status: report.StatusPass, contains: "numeric"},
		{name: "service not found with closest names", objs: without(replace(healthy(), service("webb")), "svc", "web"),
			layer: report.LayerService, want: report.CodeSvcNotFound, status: report.StatusFail, verdict: report.StatusFail, contains: "did you mean webb",
			firstFail: report.LayerService},
		{name: "selector matches no pods", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.Selector = map[string]string{"app": "web-v2"}
		})), layer: report.LayerService, want: report.CodeSvcSelectorNoPods, status: report.StatusFail, firstFail: report.LayerService,
			contains: "app=web (want web-v2)"},
		{name: "named port missing on one pod", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.Ports[0].TargetPort = intstr.FromString("http")
		}), pod("web-2", "web", "10.244.2.5", "node-b", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Name = "web" })),
			layer: report.LayerService, want: report.CodePortNameUnresolved, status: report.StatusWarn, contains: "1 of 2 selected Pods do not declare: web-2"},
		{name: "named port missing on every pod", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.Ports[0].TargetPort = intstr.FromString("metrics")
		})), layer: report.LayerService, want: report.CodePortNameUnresolved, status: report.StatusFail, contains: "2 of 2 selected Pods"},
		{name: "named port resolves everywhere", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.Ports[0].TargetPort = intstr.FromString("http")
		})), layer: report.LayerService, want: report.CodePortNamedResolved, status: report.StatusPass, contains: "8080/TCP"},
		{name: "named port protocol mismatch", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.Ports[0].TargetPort = intstr.FromString("http")
			s.Spec.Ports[0].Protocol = corev1.ProtocolUDP
		})), layer: report.LayerService, want: report.CodePortProtocol, status: report.StatusFail, contains: "is TCP"},
		{name: "service port name missing in slices", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.Ports[0].Name = "web"
		})), layer: report.LayerEndpoints, want: report.CodePortMissingInSlices, status: report.StatusFail, contains: `no port named "web"`},
		{name: "no ready endpoints, crash loop is the cause", objs: replace(healthy(),
			pod("web-1", "web", "10.244.1.5", "node-a", notReady, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
				p.Status.ContainerStatuses[0].RestartCount = 7
			}),
			pod("web-2", "web", "10.244.2.5", "node-b", notReady, func(p *corev1.Pod) {
				p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
			}),
			slice("web-abc", "web", "http", 8080, ep{ip: "10.244.1.5", pod: "web-1", node: "node-a"},
				ep{ip: "10.244.2.5", pod: "web-2", node: "node-b"})),
			layer: report.LayerEndpoints, want: report.CodeEpsNoReady, status: report.StatusFail, firstFail: report.LayerEndpoints,
			contains: "kube-proxy rejects"},
		{name: "readiness probe failing named", objs: replace(healthy(),
			pod("web-2", "web", "10.244.2.5", "node-b", notReady, func(p *corev1.Pod) {
				p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
			}),
			slice("web-abc", "web", "http", 8080, ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true},
				ep{ip: "10.244.2.5", pod: "web-2", node: "node-b"})),
			layer: report.LayerEndpoints, want: report.CodePodNotReady, status: report.StatusWarn, verdict: report.StatusWarn, contains: "fails its readiness probe"},
		{name: "readiness probe failure quoted from the kubelet's Event", objs: append(replace(healthy(),
			pod("web-2", "web", "10.244.2.5", "node-b", notReady, func(p *corev1.Pod) {
				p.UID = "uid-web-2"
				p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
			}),
			slice("web-abc", "web", "http", 8080, ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true},
				ep{ip: "10.244.2.5", pod: "web-2", node: "node-b"})),
			probeEvent("e1", "web-2", "uid-web-2", "Readiness probe failed: HTTP probe failed with statuscode: 503", 14, 10),
			probeEvent("e0", "web-2", "uid-web-2", "Readiness probe failed: older", 3, 5),
			probeEvent("e2", "web-2", "uid-old", "Readiness probe failed: an earlier Pod of the same name", 9, 20),
			probeEvent("e3", "web-1", "", "Readiness probe failed: a ready Pod", 1, 20)),
			layer: report.LayerEndpoints, want: report.CodePodNotReady, status: report.StatusWarn, verdict: report.StatusWarn,
			contains: `fails its readiness probe; kubelet: "Readiness probe failed: HTTP probe failed with statuscode: 503" (14 times, last at`},
		{name: "events forbidden → skipped check, layer still judged", objs: replace(healthy(),
			pod("web-2", "web", "10.244.2.5", "node-b", notReady, func(p *corev1.Pod) {
				p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
			}),
			slice("web-abc", "web", "http", 8080, ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true},
				ep{ip: "10.244.2.5", pod: "web-2", node: "node-b"})),
			reactors: []reactor{forbidden("list", "events")}, layer: report.LayerEndpoints, want: report.CodeAPIEvents, status: report.StatusWarn},
		{name: "terminating fallback", objs: replace(without(healthy(), "pod", "web-2"),
			slice("web-abc", "web", "http", 8080, ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", terminating: true})),
			layer: report.LayerEndpoints, want: report.CodeEpsTerminatingOnly, status: report.StatusWarn, absent: []string{report.CodeEpsNoReady}},
		{name: "ready pod missing from slices", objs: replace(healthy(),
			slice("web-abc", "web", "http", 8080, ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true})),
			layer: report.LayerEndpoints, want: report.CodeEpsReadyPodMissing, status: report.StatusFail, contains: "web-2 (10.244.2.5)"},
		{name: "ghost ip", objs: replace(healthy(), pod("web-2", "web", "10.244.2.9", "node-b")),
			layer: report.LayerEndpoints, want: report.CodeEpsGhostIP, status: report.StatusFail, contains: "Pod IP now 10.244.2.9"},
		{name: "pod gone", objs: replace(healthy(), slice("web-abc", "web", "http", 8080,
			ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true},
			ep{ip: "10.244.2.5", pod: "web-2", node: "node-b", ready: true},
			ep{ip: "10.244.3.5", pod: "web-3", node: "node-b", ready: true})),
			layer: report.LayerEndpoints, want: report.CodeEpsPodGone, status: report.StatusFail, contains: "10.244.3.5 (pod web-3)"},
		{name: "foreign manager", objs: replace(healthy(), func() *discoveryv1.EndpointSlice {
			s := slice("web-abc", "web", "http", 8080, ep{ip: "10.244.1.5", pod: "web-1", ready: true},
				ep{ip: "10.244.2.5", pod: "web-2", ready: true})
			s.Labels[discoveryv1.LabelManagedBy] = "my-operator"
			return s
		}()), layer: report.LayerEndpoints, want: report.CodeEpsForeignManager, status: report.StatusWarn, contains: "my-operator"},
		{name: "no selector and no slices", objs: without(replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.Selector = nil
		})), "eps", "web-abc"), layer: report.LayerEndpoints, want: report.CodeEpsNoSlices, status: report.StatusFail},
		{name: "no selector noted", objs: replace(healthy(), service("web", func(s *corev1.Service) { s.Spec.Selector = nil })),
			layer: report.LayerService, want: report.CodeSvcNoSelector, status: report.StatusPass, contains: "1 EndpointSlices found"},
		{name: "service proxy name", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Labels = map[string]string{labelServiceProxyName: "cilium"}
		})), layer: report.LayerService, want: report.CodeSvcProxyName, status: report.StatusWarn, contains: "kube-proxy ignores"},
		{name: "session affinity default timeout", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		})), layer: report.LayerService, want: report.CodeSvcSessionAffinity, status: report.StatusPass, contains: "10800s"},
		{name: "etp local nodes without endpoint", objs: replace(healthy(), node("node-c", true), service("web", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		})), layer: report.LayerService, want: report.CodeSvcETPLocal, status: report.StatusWarn, contains: "1 of 3 nodes"},
		{name: "itp local", objs: replace(healthy(), node("node-c", true), service("web", func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal)
		})), layer: report.LayerService, want: report.CodeSvcITPLocal, status: report.StatusWarn},
		{name: "topology without hints", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.TrafficDistribution = ptr("PreferClose")
		})), layer: report.LayerService, want: report.CodeSvcTopologyNoHints, status: report.StatusWarn, contains: "2 of 2 ready endpoints have no zone hint"},
		// PreferSameNode on nodes without zone labels: the EndpointSlice
		// controller writes node hints only, and kube-proxy routes by them.
		{name: "PreferSameNode with node hints only", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.TrafficDistribution = ptr(corev1.ServiceTrafficDistributionPreferSameNode)
		}), hintedSlice(true, false)), layer: report.LayerService, want: report.CodeSvcTopology, status: report.StatusPass},
		{name: "PreferSameNode without hints", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.TrafficDistribution = ptr(corev1.ServiceTrafficDistributionPreferSameNode)
		})), layer: report.LayerService, want: report.CodeSvcTopologyNoHints, status: report.StatusWarn, contains: "have no node or zone hint"},
		{name: "PreferSameZone with node hints only", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.TrafficDistribution = ptr(corev1.ServiceTrafficDistributionPreferSameZone)
		}), hintedSlice(true, false)), layer: report.LayerService, want: report.CodeSvcTopologyNoHints, status: report.StatusWarn, contains: "have no zone hint"},
		{name: "publishNotReadyAddresses", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.PublishNotReadyAddresses = true
		})), layer: report.LayerService, want: report.CodeSvcPublishNotReady, status: report.StatusPass},
		{name: "lb pending", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
		})), layer: report.LayerService, want: report.CodeSvcLBPending, status: report.StatusWarn},
		// The node lifecycle controller marks a NotReady node's Pods not
		// ready; a not-ready endpoint is what makes svctrace read its node.
		{name: "node not ready", objs: replace(healthy(), node("node-b", false),
			slice("web-abc", "web", "http", 8080,
				ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true},
				ep{ip: "10.244.2.5", pod: "web-2", node: "node-b", ready: false})),
			layer: report.LayerEndpoints, want: report.CodePodNodeNotReady, status: report.StatusWarn, contains: "node-b"},
		{name: "pod deleting", objs: replace(healthy(), pod("web-2", "web", "10.244.2.5", "node-b", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: fixedNow()}
		})), layer: report.LayerEndpoints, want: report.CodePodTerminating, status: report.StatusWarn},
		{name: "pod pending unscheduled", objs: replace(healthy(), pod("web-3", "web", "", "", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: "Unschedulable", Message: "0/2 nodes are available"}}
		})), layer: report.LayerEndpoints, want: report.CodePodPhase, status: report.StatusWarn, contains: "Unschedulable"},
		{name: "readiness gate", objs: replace(healthy(), pod("web-2", "web", "10.244.2.5", "node-b", func(p *corev1.Pod) {
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb-ready"}}
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		})), layer: report.LayerEndpoints, want: report.CodePodReadinessGates, status: report.StatusWarn, contains: "example.com/lb-ready"},
		{name: "forbidden slices → unknown with permission", objs: healthy(),
			reactors: []reactor{forbidden("list", "endpointslices")}, layer: report.LayerEndpoints, want: report.CodeAPIForbidden,
			status: report.StatusUnknown, verdict: report.StatusUnknown,
			contains: "cannot list endpointslices.discovery.k8s.io in namespace default (forbidden)"},
		{name: "forbidden nodes → skipped check, layer still judged", objs: replace(healthy(),
			slice("web-abc", "web", "http", 8080,
				ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true},
				ep{ip: "10.244.2.5", pod: "web-2", node: "node-b", ready: false})),
			reactors: []reactor{forbidden("get", "nodes")}, layer: report.LayerEndpoints, want: report.CodeAPINodes, status: report.StatusWarn},
		{name: "forbidden node list for a Local policy → skipped check", objs: func() []runtime.Object {
			s := service("web")
			s.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal)
			return replace(healthy(), s)
		}(), reactors: []reactor{forbidden("list", "nodes")}, layer: report.LayerEndpoints, want: report.CodeAPINodes, status: report.StatusPass},
		{name: "no kube-dns", objs: without(healthy(), "svc", "kube-dns"), layer: report.LayerDNS, want: report.CodeDNSNoClusterDNS,
			status: report.StatusWarn},
		{name: "kube-dns without ready endpoints", objs: func() []runtime.Object {
			s := slice("kube-dns-abc", "kube-dns", "dns", 53, ep{ip: "10.244.0.2"})
			s.Namespace = "kube-system"
			return replace(healthy(), s)
		}(), layer: report.LayerDNS, want: report.CodeDNSNoEndpoints, status: report.StatusFail, firstFail: report.LayerDNS},
		{name: "dns expected answer", objs: healthy(), layer: report.LayerDNS, want: report.CodeDNSExpected, status: report.StatusPass,
			contains: "web.default.svc.cluster.local should resolve to A 10.96.0.20"},
		{name: "headless dns answer", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.ClusterIP = corev1.ClusterIPNone
			s.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
		})), layer: report.LayerDNS, want: report.CodeDNSExpected, status: report.StatusPass, contains: "A 10.244.1.5, 10.244.2.5"},
		{name: "externalname cname", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}
		})), layer: report.LayerDNS, want: report.CodeDNSExpected, status: report.StatusPass, contains: "CNAME db.example.com"},
		{name: "headless without ports still judged", objs: replace(healthy(), service("web", func(s *corev1.Service) {
			s.Spec.ClusterIP = corev1.ClusterIPNone
			s.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
			s.Spec.Ports = nil
		}), slice("web-abc", "web", "", 0, ep{ip: "10.244.1.5", pod: "web-1", node: "node-a"},
			ep{ip: "10.244.2.5", pod: "web-2", node: "node-b"})), layer: report.LayerEndpoints, want: report.CodeEpsNoReady,
			status: report.StatusFail, contains: "headless name has no records"},
		{name: "slice port protocol differs", objs: replace(healthy(), func() *discoveryv1.EndpointSlice {
			s := slice("web-abc", "web", "http", 8080, ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true},
				ep{ip: "10.244.2.5", pod: "web-2", node: "node-b", ready: true})
			s.Ports[0].Protocol = ptr(corev1.ProtocolUDP)
			return s
		}()), layer: report.LayerEndpoints, want: report.CodePortSliceProtocol, status: report.StatusFail, absent: []string{report.CodeEpsNoReady},
			contains: "as UDP"},
		{name: "cluster domain flag", objs: healthy(), opts: Options{ClusterDomain: "corp.internal"}, layer: report.LayerDNS,
			want: report.CodeDNSExpected, contains: "web.default.svc.corp.internal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := runTrace(t, tc.objs, tc.opts, tc.reactors...)
			got := codes(tr, tc.layer)
			c, ok := got[tc.want]
			if !ok {
				t.Fatalf("layer %s lacks %s; has %v", tc.layer, tc.want, keys(got))
			}
			for _, a := range tc.absent {
				if _, ok := got[a]; ok {
					t.Errorf("layer %s has %s, want it absent", tc.layer, a)
				}
			}
			if tc.status != "" && tr.Layer(tc.layer).Status != tc.status {
				t.Errorf("layer %s status %s, want %s (reason %q)", tc.layer, tr.Layer(tc.layer).Status, tc.status, tr.Layer(tc.layer).Reason)
			}
			if tc.verdict != "" && tr.Verdict.Status != tc.verdict {
				t.Errorf("verdict %s, want %s: %s", tr.Verdict.Status, tc.verdict, tr.Verdict.Summary)
			}
			if tc.firstFail != "" && tr.Verdict.FirstFailingLayer != tc.firstFail {
				t.Errorf("first failing layer %s, want %s", tr.Verdict.FirstFailingLayer, tc.firstFail)
			}
			if tc.contains != "" && !strings.Contains(c.Message, tc.contains) {
				t.Errorf("%s message %q lacks %q", tc.want, c.Message, tc.contains)
			}
			if c.NextStep == "" {
				t.Errorf("%s has no next step", tc.want)
			}
		})
	}
}

func keys(m map[string]report.Check) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestClusterDNSForbiddenIsUnknown: a user who cannot read kube-system sees
// the dns layer unknown (not failed) and the rest judged.
func TestClusterDNSForbiddenIsUnknown(t *testing.T) {
	client := fake.NewClientset(healthy()...)
	client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "kube-system" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: a.GetResource().Resource}, "", nil)
		}
		return false, nil, nil
	})
	tr, err := Run(context.Background(), client, "default", "web", Options{Now: fixedNow, NoNode: true})
	if err != nil {
		t.Fatal(err)
	}
	assertCatalogued(t, tr)
	l := tr.Layer(report.LayerDNS)
	if l.Status != report.StatusUnknown || !strings.Contains(l.Reason, "in namespace kube-system (forbidden)") {
		t.Fatalf("dns layer %s %q", l.Status, l.Reason)
	}
	if _, ok := codes(tr, report.LayerDNS)[report.CodeDNSExpected]; !ok {
		t.Fatal("the expected answer must still be stated")
	}
	if tr.Layer(report.LayerEndpoints).Status != report.StatusPass || tr.Verdict.Status != report.StatusUnknown || tr.Failed() {
		t.Fatalf("endpoints %s, verdict %+v", tr.Layer(report.LayerEndpoints).Status, tr.Verdict)
	}
}

func TestCrashLoopIsLikelyCause(t *testing.T) {
	objs := replace(healthy(),
		pod("web-1", "web", "10.244.1.5", "node-a", notReady, func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		}),
		slice("web-abc", "web", "http", 8080, ep{ip: "10.244.1.5", pod: "web-1", node: "node-a"}))
	objs = without(objs, "pod", "web-2")
	tr, _ := runTrace(t, objs, Options{})
	if tr.Verdict.FirstFailingLayer != report.LayerEndpoints || !strings.Contains(tr.Verdict.LikelyCause, "CrashLoopBackOff") {
		t.Fatalf("verdict %+v", tr.Verdict)
	}
}

func TestNodeLayersSkippedWithReason(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{{Options{NoNode: true}, report.ReasonNoNode}, {Options{}, report.ReasonNoCollector}} {
		tr, _ := runTrace(t, healthy(), tc.opts)
		for _, n := range report.NodeLayers {
			if l := tr.Layer(n); l.Status != report.StatusSkipped || l.Reason != tc.want {
				t.Errorf("layer %s: %s %q, want skipped %q", n, l.Status, l.Reason, tc.want)
			}
		}
		if c := codes(tr, report.LayerDNS)[report.CodeDNSLiveQuery]; c.Status != report.StatusSkipped || !strings.Contains(c.Message, tc.want) {
			t.Errorf("DNS live query check %+v", c)
		}
	}
}

// fakeInspector records the plan it was given and reports one failed node.
type fakeInspector struct {
	called bool
	plan   plan.NodePlan
	fail   bool
}

func (f *fakeInspector) Inspect(_ context.Context, np plan.NodePlan) (*plan.NodeReport, error) {
	f.called = true
	f.plan = np
	r := &plan.NodeReport{Collector: &report.CollectorRun{Image: "img", Namespace: "svctrace-system", Profile: "netadmin"}}
	for _, n := range np.Nodes {
		if f.fail {
			r.Nodes = append(r.Nodes, plan.NodeView{Node: n.Name, Roles: n.Roles, Failure: "collector could not pull its image"})
		}
	}
	return r, nil
}

func TestInspectorGetsPlanAndReportIsJudged(t *testing.T) {
	f := &fakeInspector{fail: true}
	client := fake.NewClientset(healthy()...)
	tr, err := Run(context.Background(), client, "default", "web", Options{Inspector: f, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if !f.called {
		t.Fatal("inspector not called")
	}
	var planned []string
	for _, n := range f.plan.Nodes {
		planned = append(planned, n.Name)
		if r := n.CollectRequest(); r == nil || r.NodeName != n.Name || r.Service.Name != "web" {
			t.Errorf("node %s planned with request %+v", n.Name, r)
		}
		if !slices.Equal(n.Roles, []string{plan.RoleEndpoints}) {
			t.Errorf("node %s roles %v, want [endpoints]", n.Name, n.Roles)
		}
	}
	if len(planned) == 0 {
		t.Fatal("no node planned for a Service with endpoints")
	}
	if tr.Metadata.Collector == nil || tr.Metadata.Collector.Image != "img" {
		t.Fatalf("collector metadata from the report not kept: %+v", tr.Metadata.Collector)
	}
	l := tr.Layer(report.LayerDatapath)
	if l.Status == report.StatusPass || len(l.Nodes) != len(planned) {
		t.Fatalf("datapath %s with %d node results, want not pass with %d", l.Status, len(l.Nodes), len(planned))
	}
}

func TestReportFailureLeavesAPILayers(t *testing.T) {
	client := fake.NewClientset(healthy()...)
	in, err := input.Fetch(context.Background(), client, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	const why = "collector Pods cannot run in namespace \"svctrace-system\": missing permission: verb create on resource pods"
	tr := Assemble(in, &plan.NodeReport{Failure: why}, Options{Inspector: &fakeInspector{}, Now: fixedNow})
	for _, n := range report.NodeLayers {
		if l := tr.Layer(n); l.Status != report.StatusUnknown || l.Reason != why {
			t.Errorf("layer %s: %s %q, want unknown with the report's failure", n, l.Status, l.Reason)
		}
	}
	if l := tr.Layer(report.LayerService); l.Status != report.StatusPass {
		t.Errorf("service layer %s, want pass: the API layers must still be judged", l.Status)
	}
}

func TestPortMatchingNoServicePortIsAnError(t *testing.T) {
	f := &fakeInspector{}
	client := fake.NewClientset(healthy()...)
	_, err := Run(context.Background(), client, "default", "web", Options{Port: "nosuch", Inspector: f})
	var pe *PortNotFoundError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "http 80/TCP") {
		t.Fatalf("err %v, want a PortNotFoundError listing http 80/TCP", err)
	}
	if f.called {
		t.Fatal("collectors started for a --port that matches nothing")
	}
	if _, err := Run(context.Background(), client, "default", "web", Options{Port: "80", NoNode: true}); err != nil {
		t.Fatalf("--port 80: %v", err)
	}
	// A saved trace re-judged with a port it lacks still says so.
	in, err := input.Fetch(context.Background(), client, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if c := codes(Assemble(in, nil, Options{Port: "https", NoNode: true}), report.LayerService)[report.CodeSvcPortFilterAbsent]; c.Status != report.StatusFail {
		t.Fatalf("%s: %+v", report.CodeSvcPortFilterAbsent, c)
	}
}

func TestMissingNamespaceIsNamed(t *testing.T) {
	client := fake.NewClientset(healthy()...)
	tr, err := Run(context.Background(), client, "defualt", "web", Options{NoNode: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := codes(tr, report.LayerService)[report.CodeSvcNamespaceMissing]; !ok {
		t.Fatalf("no %s for a missing namespace: %v", report.CodeSvcNamespaceMissing, codes(tr, report.LayerService))
	}
	if !strings.Contains(tr.Verdict.Summary+tr.Verdict.LikelyCause, "namespace defualt does not exist") {
		t.Fatalf("verdict %+v", tr.Verdict)
	}
}

func TestHeadlessSkipsDatapath(t *testing.T) {
	tr, _ := runTrace(t, replace(healthy(), service("web", func(s *corev1.Service) {
		s.Spec.ClusterIP = corev1.ClusterIPNone
		s.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
	})), Options{Inspector: &fakeInspector{}})
	if l := tr.Layer(report.LayerDatapath); l.Status != report.StatusSkipped || !strings.Contains(l.Reason, "headless") {
		t.Fatalf("datapath %+v", l)
	}
}

func TestServiceGetErrorStopsTrace(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("get", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "web", nil)
	})
	if _, err := Run(context.Background(), client, "default", "web", Options{}); err == nil ||
		!strings.Contains(err.Error(), "cannot get service web in namespace default") {
		t.Fatalf("err %v", err)
	}
}

// TestHappyPathRequests pins the API budget when nothing is wrong: six
// requests (the Service, its slices, its Pods, the namespace's
// NetworkPolicies, kube-dns and its slices) and no node read.
func TestHappyPathRequests(t *testing.T) {
	_, client := runTrace(t, healthy(), Options{NoNode: true})
	if n := len(client.Actions()); n > 6 {
		for _, a := range client.Actions() {
			t.Logf("%s %s", a.GetVerb(), a.GetResource().Resource)
		}
		t.Fatalf("%d API requests on the happy path, want ≤ 6", n)
	}
	for _, a := range client.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok && a.GetResource().Resource == "pods" {
			if l.GetListRestrictions().Labels.String() != "app=web" {
				t.Errorf("pods listed with selector %q", l.GetListRestrictions().Labels)
			}
		}
	}
}

// TestLocalPolicyNodesMatchKubeProxy: a node counts as having a local
// endpoint when kube-proxy's CategorizeEndpoints gives it one (ready, or
// else serving and terminating, as during a rollout), and the nodes that
// never receive the traffic in question are not counted against the
// Service: NotReady nodes, and for a LoadBalancer the nodes the service
// controller keeps out of the load balancer.
func TestLocalPolicyNodesMatchKubeProxy(t *testing.T) {
	lb := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	}
	nodePort := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	itp := func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal) }
	labelled := func(name, key, value string) *corev1.Node {
		n := node(name, true)
		n.Labels = map[string]string{key: value}
		return n
	}
	rollout := slice("web-abc", "web", "http", 8080,
		ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true},
		ep{ip: "10.244.2.5", pod: "web-2", node: "node-b", terminating: true})
	tests := []struct {
		name  string
		svc   func(*corev1.Service)
		extra []runtime.Object
		code  string
		want  string // "" = no finding
	}{
		{"ETP: node with only a serving terminating endpoint", lb, []runtime.Object{rollout}, report.CodeSvcETPLocal, ""},
		{"ITP: node with only a serving terminating endpoint", itp, []runtime.Object{rollout}, report.CodeSvcITPLocal, ""},
		{"ETP: NotReady node not counted", lb, []runtime.Object{node("node-c", false)}, report.CodeSvcETPLocal, ""},
		{"ITP: NotReady node not counted", itp, []runtime.Object{node("node-c", false)}, report.CodeSvcITPLocal, ""},
		{"ETP LB: node excluded from load balancers not counted", lb,
			[]runtime.Object{labelled("node-c", corev1.LabelNodeExcludeBalancers, "")}, report.CodeSvcETPLocal, ""},
		{"ETP LB: exclusion label set to false keeps the node", lb,
			[]runtime.Object{labelled("node-c", corev1.LabelNodeExcludeBalancers, "false")}, report.CodeSvcETPLocal, "1 of 3 nodes"},
		{"ETP NodePort: the load-balancer label does not stop NodePort traffic", nodePort,
			[]runtime.Object{labelled("node-c", corev1.LabelNodeExcludeBalancers, "true")}, report.CodeSvcETPLocal, "1 of 3 nodes"},
		{"ITP: the load-balancer label is irrelevant to in-cluster clients", itp,
			[]runtime.Object{labelled("node-c", corev1.LabelNodeExcludeBalancers, "true")}, report.CodeSvcITPLocal, "1 of 3 nodes"},
		{"ETP: a Ready node without any endpoint", lb, []runtime.Object{node("node-c", true)}, report.CodeSvcETPLocal, "1 of 3 nodes"},
		{"ETP: a node with only a not-serving endpoint", lb, []runtime.Object{slice("web-abc", "web", "http", 8080,
			ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true},
			ep{ip: "10.244.2.5", pod: "web-2", node: "node-b"})}, report.CodeSvcETPLocal, "1 of 2 nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := replace(healthy(), append([]runtime.Object{service("web", tt.svc)}, tt.extra...)...)
			tr, _ := runTrace(t, objs, Options{})
			c, ok := codes(tr, report.LayerService)[tt.code]
			switch {
			case tt.want == "" && ok:
				t.Errorf("%s fired: %q", tt.code, c.Message)
			case tt.want != "" && !ok:
				t.Errorf("no %s; service checks %v", tt.code, keys(codes(tr, report.LayerService)))
			case tt.want != "" && !strings.Contains(c.Message, tt.want):
				t.Errorf("%s message %q lacks %q", tt.code, c.Message, tt.want)
			}
		})
	}
}

// TestPlanNodesUnreadableIsAGap: the nodes the plan needs cannot be read.
// The collectors still run where the slices say, and the trace names the
// missing read (API003) instead of dropping it.
func TestPlanNodesUnreadableIsAGap(t *testing.T) {
	f := &fakeInspector{}
	tr, _ := runTrace(t, healthy(), Options{Inspector: f}, forbidden("get", "nodes"))
	if !f.called || len(f.plan.Nodes) == 0 {
		t.Fatalf("inspector called %v with %d nodes", f.called, len(f.plan.Nodes))
	}
	found := false
	for _, l := range tr.Layers {
		for _, c := range l.Checks {
			found = found || c.Code == report.CodeAPINodes
		}
	}
	if !found {
		t.Errorf("no %s after the node read failed", report.CodeAPINodes)
	}
}

// TestEndpointIPOwnedByNoPod: a selector-less Service with a hand-made slice.
// 10.244.1.9 is inside node-a's Pod CIDR and no Pod has it (EPS017);
// 10.244.2.5 is web-2's; 192.0.2.10 is outside every Pod CIDR (an external
// backend) and is not looked up.
func TestEndpointIPOwnedByNoPod(t *testing.T) {
	objs := healthy()
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.Service:
			if v.Name == "web" {
				v.Spec.Selector = nil
			}
		case *discoveryv1.EndpointSlice:
			if v.Name == "web-abc" {
				v.Labels[discoveryv1.LabelManagedBy] = "admin"
				v.Endpoints = nil
				for _, ip := range []string{"10.244.1.9", "10.244.2.5", "192.0.2.10"} {
					v.Endpoints = append(v.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}})
				}
			}
		case *corev1.Node:
			v.Spec.PodCIDRs = map[string][]string{"node-a": {"10.244.1.0/24"}, "node-b": {"10.244.2.0/24"}}[v.Name]
		}
	}
	var asked []string
	podIP := reactor{verb: "list", resource: "pods"}
	client := fake.NewClientset(objs...)
	client.PrependReactor(podIP.verb, podIP.resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		fs := a.(k8stesting.ListAction).GetListRestrictions().Fields
		ip, ok := fs.RequiresExactMatch("status.podIP")
		if !ok {
			return false, nil, nil
		}
		asked = append(asked, ip)
		out := &corev1.PodList{}
		for _, o := range objs {
			if p, isPod := o.(*corev1.Pod); isPod && p.Status.PodIP == ip {
				out.Items = append(out.Items, *p)
			}
		}
		return true, out, nil
	})
	tr, err := Run(context.Background(), client, "default", "web", Options{NoNode: true, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{"10.244.1.9", "10.244.2.5"}) {
		t.Errorf("looked up %v, want the two IPs inside Pod CIDRs", asked)
	}
	var got *report.Check
	for _, c := range tr.Layer(report.LayerEndpoints).Checks {
		if c.Code == report.CodeEpsUnownedIP {
			got = &c
		}
	}
	if got == nil || !strings.Contains(got.Message, "10.244.1.9") || strings.Contains(got.Message, "10.244.2.5") || strings.Contains(got.Message, "192.0.2.10") {
		t.Fatalf("EPS017 = %+v", got)
	}
	if tr.Verdict.Status != report.StatusFail || tr.Verdict.Code != report.CodeEpsUnownedIP {
		t.Errorf("verdict %+v", tr.Verdict)
	}
}

// TestSelectorSpansWorkloads: app=web picks a Deployment's Pods (two
// ReplicaSets mid-rollout count as one) and a StatefulSet's.
func TestSelectorSpansWorkloads(t *testing.T) {
	own := func(kind, name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: name, Controller: ptr(true)}}
			if kind == "ReplicaSet" {
				p.Labels["pod-template-hash"] = name[strings.LastIndex(name, "-")+1:]
			}
		}
	}
	objs := healthy()
	for i, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Name == "web-1" {
			objs[i] = pod("web-1", "web", "10.244.1.5", "node-a", own("ReplicaSet", "web-7d9f"))
		} else if ok && p.Name == "web-2" {
			objs[i] = pod("web-2", "web", "10.244.2.5", "node-b", own("ReplicaSet", "web-5c4b"))
		}
	}
	tr, _ := runTrace(t, objs, Options{NoNode: true})
	for _, c := range tr.Layer(report.LayerService).Checks {
		if c.Code == report.CodeSvcSeveralWorkloads {
			t.Fatalf("one Deployment mid-rollout reported as several workloads: %s", c.Message)
		}
	}
	objs = append(objs, pod("cache-0", "web", "10.244.1.7", "node-a", own("StatefulSet", "cache")))
	tr, _ = runTrace(t, objs, Options{NoNode: true})
	var got *report.Check
	for _, c := range tr.Layer(report.LayerService).Checks {
		if c.Code == report.CodeSvcSeveralWorkloads {
			got = &c
		}
	}
	if got == nil || !strings.Contains(got.Message, "Deployment web (2 Pod(s)), StatefulSet cache (1 Pod(s))") {
		t.Fatalf("SVC020 = %+v", got)
	}
}

// TestSourceRangesDropInClusterClients: an LB admitting only 203.0.113.0/24
// drops node-b's Pods and both nodes when they use the LB IP; widening the
// ranges to the cluster's networks removes the warning.
func TestSourceRangesDropInClusterClients(t *testing.T) {
	build := func(ranges ...string) []runtime.Object {
		objs := healthy()
		for _, o := range objs {
			switch v := o.(type) {
			case *corev1.Service:
				if v.Name == "web" {
					v.Spec.Type = corev1.ServiceTypeLoadBalancer
					v.Spec.Ports[0].NodePort = 30080
					v.Spec.LoadBalancerSourceRanges = ranges
					v.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}
				}
			case *corev1.Node:
				ip := map[string]string{"node-a": "10.0.0.11", "node-b": "10.0.0.12"}[v.Name]
				v.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
				v.Spec.PodCIDRs = map[string][]string{"node-a": {"10.244.1.0/24"}, "node-b": {"10.244.2.0/24"}}[v.Name]
			}
		}
		return objs
	}
	find := func(tr *report.ServiceTrace) *report.Check {
		for _, c := range tr.Layer(report.LayerService).Checks {
			if c.Code == report.CodeSvcSourceRanges {
				return &c
			}
		}
		return nil
	}
	tr, _ := runTrace(t, build("203.0.113.0/24", "10.244.1.0/24"), Options{NoNode: true})
	c := find(tr)
	if c == nil || !strings.Contains(c.Message, "node node-a (10.0.0.11), Pods on node-b (10.244.2.0/24), node node-b (10.0.0.12)") || strings.Contains(c.Message, "Pods on node-a") {
		t.Fatalf("SVC021 = %+v", c)
	}
	tr, _ = runTrace(t, build("203.0.113.0/24", "10.0.0.0/8"), Options{NoNode: true})
	if c := find(tr); c != nil {
		t.Errorf("ranges covering the cluster still warned: %s", c.Message)
	}
}

// TestSelectorMatchesPodsOnlyElsewhere: a selector that matches no Pod of
// the Service's namespace but Pods of others says so (a Service selects its
// own namespace's Pods only); a user who may not list Pods cluster-wide gets
// the same failure without the hint, and no gap.
func TestSelectorMatchesPodsOnlyElsewhere(t *testing.T) {
	inShop := func(p *corev1.Pod) { p.Namespace = "shop" }
	objs := replace(healthy(), service("web", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "cart"} }),
		pod("cart-1", "cart", "10.244.1.9", "node-a", inShop), pod("cart-2", "cart", "10.244.2.9", "node-b", inShop))
	tr, _ := runTrace(t, objs, Options{})
	c, ok := codes(tr, report.LayerService)[report.CodeSvcSelectorNoPods]
	if !ok || c.Status != report.StatusFail {
		t.Fatalf("no failing %s: %+v", report.CodeSvcSelectorNoPods, tr.Layer(report.LayerService).Checks)
	}
	for _, want := range []string{"it matches 2 Pod(s) in another namespace (shop/cart-1, shop/cart-2)", "its own namespace only"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q lacks %q", c.Message, want)
		}
	}

	client := fake.NewClientset(objs...)
	client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == metav1.NamespaceAll {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
		}
		return false, nil, nil
	})
	tr, err := Run(context.Background(), client, "default", "web", Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	c, ok = codes(tr, report.LayerService)[report.CodeSvcSelectorNoPods]
	if !ok || strings.Contains(c.Message, "another namespace") || len(tr.Layer(report.LayerService).Checks) == 0 {
		t.Errorf("without a cluster-wide list: want %s without the hint, got %+v", report.CodeSvcSelectorNoPods, tr.Layer(report.LayerService).Checks)
	}
}

// TestExternalNameInspectsAStandInNode: an ExternalName has no endpoints and
// no rules, but its DNS answer (the CNAME and its target's address) only a
// query from inside the cluster shows: one Ready node is inspected as a
// stand-in, and the layers that do not apply stay skipped.
func TestExternalNameInspectsAStandInNode(t *testing.T) {
	objs := replace(healthy(), service("web", func(s *corev1.Service) {
		s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}
	}))
	f := &fakeInspector{}
	tr, err := Run(context.Background(), fake.NewClientset(objs...), "default", "web", Options{Inspector: f, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.plan.Nodes) != 1 || !slices.Equal(f.plan.Nodes[0].Roles, []string{plan.RoleStandIn}) {
		t.Fatalf("plan %+v, want one stand-in node", f.plan.Nodes)
	}
	for _, l := range []report.LayerName{report.LayerEndpoints, report.LayerDatapath, report.LayerConntrack, report.LayerRoute} {
		if s := tr.Layer(l).Status; s != report.StatusSkipped {
			t.Errorf("layer %s is %s, want skipped", l, s)
		}
	}
}

// hintedSlice is healthy()'s slice with node and/or zone hints on both
// endpoints, each for its own node (zone z1).
func hintedSlice(nodes, zones bool) *discoveryv1.EndpointSlice {
	sl := slice("web-abc", "web", "http", 8080,
		ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true},
		ep{ip: "10.244.2.5", pod: "web-2", node: "node-b", ready: true})
	for i := range sl.Endpoints {
		h := &discoveryv1.EndpointHints{}
		if nodes {
			h.ForNodes = []discoveryv1.ForNode{{Name: *sl.Endpoints[i].NodeName}}
		}
		if zones {
			h.ForZones = []discoveryv1.ForZone{{Name: "z1"}}
		}
		sl.Endpoints[i].Hints = h
	}
	return sl
}
