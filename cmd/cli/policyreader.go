package cli

import (
	"context"
	"slices"

	"github.com/svctrace/kubectl-svctrace/trace/input"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
	anpclient "sigs.k8s.io/network-policy-api/pkg/client/clientset/versioned"
)

// policyReader reads the policy kinds beyond NetworkPolicy: discovery
// through kubectl's cached client (no request while the cache is fresh),
// the admin tiers with network-policy-api's own clientset, other kinds
// counted through the metadata API (names only).
type policyReader struct {
	discovery discovery.DiscoveryInterface
	admin     anpclient.Interface
	meta      metadata.Interface
}

func newPolicyReader(cfg *rest.Config, disc discovery.DiscoveryInterface) (input.PolicyReader, error) {
	admin, err := anpclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &policyReader{discovery: disc, admin: admin, meta: meta}, nil
}

func (r *policyReader) ServedResources(_ context.Context, wanted []schema.GroupVersionResource) (map[string]bool, error) {
	groups, err := r.discovery.ServerGroups()
	if err != nil {
		return nil, err
	}
	servedGV := map[string]bool{}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			servedGV[v.GroupVersion] = true
		}
	}
	out := map[string]bool{}
	asked := map[string]bool{}
	for _, w := range wanted {
		gv := w.GroupVersion().String()
		if !servedGV[gv] || asked[gv] {
			continue
		}
		asked[gv] = true
		list, err := r.discovery.ServerResourcesForGroupVersion(gv)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, res := range list.APIResources {
			if slices.Contains(res.Verbs, "list") {
				out[w.GroupVersion().WithResource(res.Name).String()] = true
			}
		}
	}
	return out, nil
}

func (r *policyReader) AdminNetworkPolicies(ctx context.Context) ([]anpv1alpha1.AdminNetworkPolicy, error) {
	var out []anpv1alpha1.AdminNetworkPolicy
	opts := metav1.ListOptions{Limit: input.PageSize}
	for {
		list, err := r.admin.PolicyV1alpha1().AdminNetworkPolicies().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

func (r *policyReader) BaselineAdminNetworkPolicies(ctx context.Context) ([]anpv1alpha1.BaselineAdminNetworkPolicy, error) {
	var out []anpv1alpha1.BaselineAdminNetworkPolicy
	opts := metav1.ListOptions{Limit: input.PageSize}
	for {
		list, err := r.admin.PolicyV1alpha1().BaselineAdminNetworkPolicies().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

func (r *policyReader) CountUpTo(ctx context.Context, gvr schema.GroupVersionResource, namespace string, limit int64) (int, error) {
	list, err := r.meta.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: limit})
	if err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// policyReaderFor builds the reader from the connection flags; nil for a
// test's injected client, which has no REST config to build one from.
func policyReaderFor(d deps, getter genericclioptions.RESTClientGetter) input.PolicyReader {
	if d.getter != nil {
		return nil
	}
	cfg, err := getter.ToRESTConfig()
	if err != nil {
		return nil
	}
	disc, err := getter.ToDiscoveryClient()
	if err != nil {
		return nil
	}
	r, err := newPolicyReader(cfg, disc)
	if err != nil {
		return nil
	}
	return r
}
