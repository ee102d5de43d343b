package input

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

// PolicyReader reads the policy kinds beyond networking.k8s.io that decide
// traffic: the admin tiers, which svctrace evaluates, and CNI-specific kinds,
// which it only counts. The command builds one from the connection flags; a
// caller without one (nil, as a test with a fake clientset)  the trace to what it read before these kinds existed for svctrace:
// nothing is claimed about them, and no request is made.
type PolicyReader interface {
	// ServedResources is the set of resources the API serves among those
	// asked for (GroupVersionResource strings): discovery, which kubectl
	// caches, so a trace usually costs no request for it.
	ServedResources(ctx context.Context, wanted []schema.GroupVersionResource) (map[string]bool, error)
	AdminNetworkPolicies(ctx context.Context) ([]anpv1alpha1.AdminNetworkPolicy, error)
	BaselineAdminNetworkPolicies(ctx context.Context) ([]anpv1alpha1.BaselineAdminNetworkPolicy, error)
	// CountUpTo lists at most limit objects of a resource in a namespace
	// ("" for all namespaces, or a cluster-scoped resource) and returns how
	// many it got.
	CountUpTo(ctx context.Context, resource schema.GroupVersionResource, namespace string, limit int64) (int, error)
}

// UnevaluatedPolicy is a policy kind the cluster serves and svctrace does
// not evaluate, with how many objects of it could apply.
type UnevaluatedPolicy struct {
	// Kind is e.g. CiliumNetworkPolicy; Resource its group-version-resource.
	Kind     string `json:"kind"`
	Resource string `json:"resource"`
	// Namespace is where they were counted ("" cluster-wide).
	Namespace string `json:"namespace,omitempty"`
	// Count is how many objects were found (at most policyCountLimit), -1
	// when they could not be counted (Error says why).
	Count int    `json:"count"`
	Error string `json:"error,omitempty"`
}

// policyCountLimit bounds the objects listed to count a kind svctrace does
// not evaluate: one is enough to make the answer undetermined.
const policyCountLimit = 1

// unevaluatedKind is a policy resource svctrace knows of but does not
// evaluate: ClusterNetworkPolicy, Cilium's and Calico's (as CRDs, and as
// Calico's API server serves them).
type unevaluatedKind struct {
	kind       string
	gvr        schema.GroupVersionResource
	namespaced bool
}

var unevaluatedKinds = []unevaluatedKind{
	// The admin tiers' successor in network-policy-api v0.3.0, not yet
	// evaluated here.
	{"ClusterNetworkPolicy", schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: "v1alpha2", Resource: "clusternetworkpolicies"}, false},
	{"ClusterNetworkPolicy", schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: "v1beta1", Resource: "clusternetworkpolicies"}, false},
	{"CiliumNetworkPolicy", schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumnetworkpolicies"}, true},
	{"CiliumClusterwideNetworkPolicy", schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumclusterwidenetworkpolicies"}, false},
	{"Calico NetworkPolicy", schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "networkpolicies"}, true},
	{"Calico GlobalNetworkPolicy", schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "globalnetworkpolicies"}, false},
	{"Calico NetworkPolicy", schema.GroupVersionResource{Group: "projectcalico.org", Version: "v3", Resource: "networkpolicies"}, true},
	{"Calico GlobalNetworkPolicy", schema.GroupVersionResource{Group: "projectcalico.org", Version: "v3", Resource: "globalnetworkpolicies"}, false},
}

var adminPolicyGV = schema.GroupVersion{Group: anpv1alpha1.GroupVersion.Group, Version: anpv1alpha1.GroupVersion.Version}

// FetchPolicyKinds reads, for the namespaces whose NetworkPolicies were
// read, the other policy kinds the API serves: discovery says which exist
// (an absent group means none); the admin tiers are listed, the others
// counted. Nothing here is a gap: what cannot be read makes the answers it
// could change undetermined, with the reason.
func FetchPolicyKinds(ctx context.Context, reader PolicyReader, in *Input, namespaces []string) {
	if reader == nil {
		return
	}
	wanted := []schema.GroupVersionResource{adminPolicyGV.WithResource("adminnetworkpolicies"), adminPolicyGV.WithResource("baselineadminnetworkpolicies")}
	for _, k := range unevaluatedKinds {
		wanted = append(wanted, k.gvr)
	}
	served, err := reader.ServedResources(ctx, wanted)
	if err != nil {
		in.AdminPoliciesUnread = "API discovery failed: " + err.Error()
		in.UnevaluatedPolicies = append(in.UnevaluatedPolicies, UnevaluatedPolicy{Kind: "policy kinds of CNI plugins", Count: -1,
			Error: "API discovery failed: " + err.Error()})
		return
	}
	unread := func(err error) string {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return "forbidden"
		}
		return err.Error()
	}
	anpRes := adminPolicyGV.WithResource("adminnetworkpolicies").String()
	banpRes := adminPolicyGV.WithResource("baselineadminnetworkpolicies").String()
	if served[anpRes] {
		anps, err := reader.AdminNetworkPolicies(ctx)
		if err != nil && !apierrors.IsNotFound(err) {
			in.AdminPoliciesUnread = "cannot list adminnetworkpolicies: " + unread(err)
		}
		in.AdminNetworkPolicies = anps
	}
	if served[banpRes] {
		banps, err := reader.BaselineAdminNetworkPolicies(ctx)
		if err != nil && !apierrors.IsNotFound(err) {
			in.AdminPoliciesUnread = "cannot list baselineadminnetworkpolicies: " + unread(err)
		}
		in.BaselineAdminNetworkPolicies = banps
	}
	for _, k := range unevaluatedKinds {
		if !served[k.gvr.String()] {
			continue
		}
		scopes := []string{""}
		if k.namespaced {
			scopes = namespaces
		}
		for _, ns := range scopes {
			u := UnevaluatedPolicy{Kind: k.kind, Resource: k.gvr.String(), Namespace: ns, Count: -1}
			if n, err := reader.CountUpTo(ctx, k.gvr, ns, policyCountLimit); err == nil {
				u.Count = n
			} else if apierrors.IsNotFound(err) {
				u.Count = 0
			} else {
				u.Error = "cannot list " + k.gvr.GroupResource().String() + ": " + unread(err)
			}
			in.UnevaluatedPolicies = append(in.UnevaluatedPolicies, u)
		}
	}
}

// UnevaluatedPresent are the kinds svctrace does not evaluate that may
// apply: objects found, or not countable.
func (in *Input) UnevaluatedPresent() []UnevaluatedPolicy {
	var out []UnevaluatedPolicy
	for _, u := range in.UnevaluatedPolicies {
		if u.Count != 0 {
			out = append(out, u)
		}
	}
	return out
}

// Describe is "CiliumNetworkPolicy in namespace shop: 1 or more" in words.
func (u UnevaluatedPolicy) Describe() string {
	scope := "cluster-wide"
	if u.Namespace != "" {
		scope = "in namespace " + u.Namespace
	}
	switch {
	case u.Count < 0:
		return u.Kind + " " + scope + " (" + u.Error + ")"
	case u.Count >= policyCountLimit:
		return u.Kind + " " + scope + " (" + strconv.Itoa(u.Count) + " or more)"
	}
	return fmt.Sprintf("%s %s (%d)", u.Kind, scope, u.Count)
}

// UnevaluatedReason is the sentence every answer they could change quotes.
func (in *Input) UnevaluatedReason() string {
	present := in.UnevaluatedPresent()
	if len(present) == 0 {
		return ""
	}
	var kinds []string
	for _, u := range present {
		kinds = append(kinds, u.Describe())
	}
	return "policies svctrace does not evaluate may decide this traffic: " + strings.Join(kinds, "; ")
}
