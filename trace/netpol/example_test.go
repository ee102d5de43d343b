package netpol_test

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/svctrace/kubectl-svctrace/trace/netpol"
)

// The trace's policy layer: the backend Pods and Service come from the
// API-side fetch, the NetworkPolicies from one list per namespace, the
// client from --from.
func ExampleEvaluate() {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
	}}}
	backend := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{PodIP: "10.0.2.10"},
	}
	denyAll := networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deny-all"},
		Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
	}
	allowFrontend := networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "allow-frontend"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
				{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}},
			}}},
		},
	}
	in := &netpol.Input{
		Backends: []corev1.Pod{backend},
		Ports:    netpol.TargetPortsOf(svc),
		Policies: []networkingv1.NetworkPolicy{denyAll, allowFrontend},
		Client: netpol.Client{Kind: netpol.ClientPod, Namespace: "web", Name: "frontend-abc",
			Labels: map[string]string{"app": "frontend"}, IPs: []netip.Addr{netip.MustParseAddr("10.0.1.5")}},
	}
	res := netpol.Evaluate(in)
	d := res.Decisions[0]
	fmt.Println(d.Allowed, "-", d.Reason)
	for _, ev := range d.Evidence {
		fmt.Println("  " + ev.String())
	}
	fmt.Println(res.Summary.Line)

	in.Client = netpol.AnyClient()
	fmt.Println(netpol.Evaluate(in).Decisions[0].Reason)
	// Output:
	// Denied - policies shop/deny-all, shop/allow-frontend select the Pod and no ingress rule admits pod web/frontend-abc on 8080/TCP
	//   shop/deny-all: no ingress rules -> Denied (a policy without ingress rules admits nothing)
	//   shop/allow-frontend ingress[0]: from pods app=frontend in namespace shop; all ports -> Denied (pod web/frontend-abc is not in namespace shop)
	// pod web/frontend-abc is admitted to 0 of 1 backend Pods, denied to 1 (shop/allow-frontend, shop/deny-all); 1 of 1 isolated for ingress by NetworkPolicy
	// policies shop/deny-all, shop/allow-frontend isolate the Pod; on 8080/TCP only pods app=frontend in namespace shop are admitted
}
