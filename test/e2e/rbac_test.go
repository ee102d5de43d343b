package e2e

import (
	"testing"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
)

// TestRestrictedKubeconfig checks that the restricted user has the RBAC svctrace
// ships (deploy/rbac.yaml, bound by test/testbed/manifests/rbac-svctrace.yaml):
// cluster-wide reads of what a trace inspects, collector Pods only in
// svctrace-system, and nothing else.
func TestRestrictedKubeconfig(t *testing.T) {
	tb := framework.Setup(t)
	_, cs := tb.RestrictedClient(t)
	ctx := framework.Context(t, time.Minute)
	cases := []struct {
		ns, group, resource, sub, verb string
		want                           bool
	}{
		{"", "", "services", "", "list", true},
		{"", "", "pods", "", "list", true},
		{"", "", "nodes", "", "list", true},
		{"", "", "namespaces", "", "list", true},
		{"", "discovery.k8s.io", "endpointslices", "", "list", true},
		{"", "networking.k8s.io", "networkpolicies", "", "list", true},
		// --watch follows the Service, its EndpointSlices and Pods.
		{"", "", "services", "", "watch", true},
		{"", "", "pods", "", "watch", true},
		{"", "discovery.k8s.io", "endpointslices", "", "watch", true},
		{"svctrace-system", "", "pods", "", "create", true},
		{"svctrace-system", "", "pods", "", "delete", true},
		{"svctrace-system", "", "pods", "log", "get", true},
		{"default", "", "pods", "", "create", false},
		{"default", "", "pods", "log", "get", false},
		{"svctrace-system", "", "pods", "exec", "create", false},
		{"", "", "secrets", "", "list", false},
		{"", "", "configmaps", "", "list", false},
		{"", "", "services", "", "delete", false},
		{"", "", "nodes", "", "patch", false},
	}
	for _, c := range cases {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
			Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
				Namespace: c.ns, Group: c.group, Resource: c.resource, Subresource: c.sub, Verb: c.verb,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != c.want {
			t.Errorf("svctrace-user %s %s/%s in %q: allowed=%v, want %v", c.verb, c.resource, c.sub, c.ns, r.Status.Allowed, c.want)
		}
	}
	// And a real call each way.
	if _, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Errorf("list services as svctrace-user: %v", err)
	}
	if _, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
		t.Error("svctrace-user can list secrets")
	}
}
