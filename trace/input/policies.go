package input

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/kubectl-svctrace/trace/netpol"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

const ResourceNetworkPolicies = "networkpolicies.networking.k8s.io"

// FetchPolicies lists the NetworkPolicies of the Service's namespace (and of
// the client Pod's, for its egress), paged. A failure becomes a gap that
// turns the policy layer unknown.
func FetchPolicies(ctx context.Context, client kubernetes.Interface, in *Input) {
	for _, ns := range []string{in.Namespace} {
		opts := metav1.ListOptions{Limit: PageSize}
		for {
			list, err := client.NetworkingV1().NetworkPolicies(ns).List(ctx, opts)
			if err != nil {
				in.Gaps = append(in.Gaps, NewGap(report.LayerPolicy, "list", ResourceNetworkPolicies, ns, err, "NetworkPolicies not judged"))
				in.UnreadPolicyNamespaces = append(in.UnreadPolicyNamespaces, ns)
				break
			}
			in.NetworkPolicies = append(in.NetworkPolicies, list.Items...)
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
	}
}

// FetchNamespaceLabels reads every namespace's labels, one paged list, when
// a policy's namespaceSelector needs more than the namespace's name (the API
// server's kubernetes.io/metadata.name label, known without a read). A
// failed list is not a gap that blinds the layer: only the answers that need
// the labels become undetermined, and they quote why.
func FetchNamespaceLabels(ctx context.Context, client kubernetes.Interface, in *Input) {
	if in.NamespaceLabels != nil || in.NamespaceLabelsUnread != "" || !in.needsNamespaceLabels() {
		return
	}
	labels := map[string]map[string]string{}
	opts := metav1.ListOptions{Limit: PageSize}
	for {
		list, err := client.CoreV1().Namespaces().List(ctx, opts)
		if err != nil {
			in.NamespaceLabelsUnread = "cannot list namespaces: " + Gap{Err: err, Forbidden: apierrors.IsForbidden(err)}.Short()
			return
		}
		for _, ns := range list.Items {
			labels[ns.Name] = ns.Labels
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	in.NamespaceLabels = labels
}

// needsNamespaceLabels says whether some policy selects namespaces by a
// label other than their name.
func (in *Input) needsNamespaceLabels() bool {
	if len(in.AdminNetworkPolicies) > 0 || len(in.BaselineAdminNetworkPolicies) > 0 {
		return true // their subjects and peers select namespaces by label
	}
	for i := range in.NetworkPolicies {
		if netpol.NeedsNamespaceLabels(&in.NetworkPolicies[i]) {
			return true
		}
	}
	return false
}

// PoliciesMayDecide says whether some policy read, or one that could not be
// read, may decide traffic to the backends.
func (in *Input) PoliciesMayDecide() bool {
	return len(in.NetworkPolicies) > 0 || len(in.UnreadPolicyNamespaces) > 0 ||
		len(in.AdminNetworkPolicies) > 0 || len(in.BaselineAdminNetworkPolicies) > 0 || in.AdminPoliciesUnread != "" ||
		len(in.UnevaluatedPresent()) > 0
}

// dnsPodLimit bounds the DNS Pods read for the client's DNS egress check.
const dnsPodLimit = 8

// FetchDNSPods reads the Pods behind the cluster DNS endpoints (their labels
// decide podSelector egress peers), one get each, up to dnsPodLimit.
func FetchDNSPods(ctx context.Context, client kubernetes.Interface, in *Input) {
	seen := map[string]bool{}
	for i := range in.DNSSlices {
		for _, e := range in.DNSSlices[i].Endpoints {
			ref := e.TargetRef
			if ref == nil || ref.Kind != "Pod" || seen[ref.Namespace+"/"+ref.Name] || len(seen) == dnsPodLimit {
				continue
			}
			seen[ref.Namespace+"/"+ref.Name] = true
			ns := ref.Namespace
			if ns == "" {
				ns = "kube-system"
			}
			p, err := client.CoreV1().Pods(ns).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				continue // the DNS decision turns Unknown for selector peers
			}
			in.DNSPods = append(in.DNSPods, *p)
		}
	}
}
