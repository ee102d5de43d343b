package frontdoor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// GroupName is the Gateway API's API group.
const GroupName = gwv1.GroupName

// Reader reads a front door. The Gateway API kinds are CRDs a cluster may
// serve at any of several versions (TCPRoute only as v1alpha2 on most
// installs, HTTPRoute as v1), so they are found through discovery, read with
// the dynamic client and converted into the typed v1 structs, whose fields
// every served version shares: no generated clientset, no assumption about
// which versions are installed. Secrets are read with the metadata client,
// so their data never leaves the API server.
type Reader struct {
	Client    kubernetes.Interface
	Dynamic   dynamic.Interface
	Discovery Discovery
	Metadata  metadata.Interface
}

// Discovery is the part of the discovery client Read uses; a
// kubernetes.Interface's Discovery() passed through
// discovery.ToDiscoveryInterfaceWithContext has it.
type Discovery interface {
	ServerGroupsWithContext(ctx context.Context) (*metav1.APIGroupList, error)
	ServerResourcesForGroupVersionWithContext(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)
}

// ReadOptions shape one Read.
type ReadOptions struct {
	// GatewayPods is --gateway-pods, a label selector for the gateway's
	// data-plane Pods in any namespace ("": derive it from the Gateway).
	GatewayPods string
	// FindDataPlane asks Read to look for those Pods (false when --from
	// already names the client).
	FindDataPlane bool
}

// NotFoundError says the entry object does not exist.
type NotFoundError struct{ Entry Entry }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %s not found in namespace %s", strings.ToLower(e.Entry.Kind), e.Entry.Name, e.Entry.Namespace)
}

// NotServedError says the cluster does not serve the entry's kind (its CRD
// is not installed).
type NotServedError struct{ Kind string }

func (e *NotServedError) Error() string {
	return fmt.Sprintf("this cluster does not serve %s (%s): the Gateway API CRD that defines it is not installed", e.Kind, GroupName)
}

// reader is one Read call's state.
type reader struct {
	*Reader
	in    *Input
	kinds map[string]schema.GroupVersionResource
}

// Read fetches the entry object and everything its checks need. The error
// is set only when the trace cannot start: the entry does not exist, its
// kind is not served, or reading it failed; a later read that fails is a
// Gap.
func (r *Reader) Read(ctx context.Context, entry Entry, opts ReadOptions) (*Input, error) {
	rd := &reader{Reader: r, in: &Input{Entry: entry, Services: map[string]*corev1.Service{}}}
	var err error
	if entry.Kind == KindIngress {
		err = rd.readIngress(ctx, opts)
	} else {
		err = rd.readGatewayAPI(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	return rd.in, nil
}

// servedKinds finds, through discovery, the resource of every Gateway API
// kind the cluster serves, at the most preferred version that serves it.
func (rd *reader) servedKinds(ctx context.Context) (map[string]schema.GroupVersionResource, error) {
	groups, err := rd.Discovery.ServerGroupsWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("discovering the API groups: %w", err)
	}
	kinds := map[string]schema.GroupVersionResource{}
	for _, g := range groups.Groups {
		if g.Name != GroupName {
			continue
		}
		versions := []string{g.PreferredVersion.Version}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				versions = append(versions, v.Version)
			}
		}
		for _, v := range versions {
			list, err := rd.Discovery.ServerResourcesForGroupVersionWithContext(ctx, GroupName+"/"+v)
			if err != nil {
				continue
			}
			for _, res := range list.APIResources {
				if strings.Contains(res.Name, "/") {
					continue // a subresource
				}
				if _, seen := kinds[res.Kind]; !seen {
					kinds[res.Kind] = schema.GroupVersionResource{Group: GroupName, Version: v, Resource: res.Name}
				}
			}
		}
	}
	return kinds, nil
}

func (rd *reader) readGatewayAPI(ctx context.Context, opts ReadOptions) error {
	kinds, err := rd.servedKinds(ctx)
	if err != nil {
		return err
	}
	rd.kinds = kinds
	entry := rd.in.Entry
	gvr, ok := kinds[entry.Kind]
	if !ok {
		return &NotServedError{Kind: entry.Kind}
	}
	u, err := rd.Dynamic.Resource(gvr).Namespace(entry.Namespace).Get(ctx, entry.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &NotFoundError{Entry: entry}
	}
	if err != nil {
		return fmt.Errorf("cannot get %s %s/%s: %w", gvr.Resource, entry.Namespace, entry.Name, err)
	}
	if entry.Kind == KindGateway {
		var gw gwv1.Gateway
		if err := fromUnstructured(u, &gw); err != nil {
			return err
		}
		rd.in.Gateways = []gwv1.Gateway{gw}
		rd.readAttachedRoutes(ctx, &gw)
	} else {
		var route Route
		if err := fromUnstructured(u, &route); err != nil {
			return err
		}
		route.Kind = entry.Kind
		rd.in.Routes = []Route{route}
		rd.readParents(ctx, &route)
	}
	rd.readClasses(ctx)
	for i := range rd.in.Routes {
		rd.readBackends(ctx, &rd.in.Routes[i])
	}
	rd.readNamespaceLabels(ctx)
	if opts.FindDataPlane {
		rd.findDataPlane(ctx, opts.GatewayPods)
	}
	return nil
}

// fromUnstructured converts a dynamic object into its typed struct; unknown
// fields (a newer or older version's) are dropped, and so is what trimMeta
// drops.
func fromUnstructured(u *unstructured.Unstructured, into any) error {
	u.SetManagedFields(nil)
	if a := u.GetAnnotations(); a[corev1.LastAppliedConfigAnnotation] != "" {
		delete(a, corev1.LastAppliedConfigAnnotation)
		u.SetAnnotations(a)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("decoding %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// readParents gets every Gateway the route names as a parent.
func (rd *reader) readParents(ctx context.Context, route *Route) {
	seen := map[string]bool{}
	for _, p := range route.Spec.ParentRefs {
		if !isGatewayRef(p) {
			continue
		}
		ns := parentNamespace(p, route.Namespace)
		key := ns + "/" + string(p.Name)
		if seen[key] {
			continue
		}
		seen[key] = true
		u, err := rd.Dynamic.Resource(rd.kinds[KindGateway]).Namespace(ns).Get(ctx, string(p.Name), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // the judge finds it missing
		}
		if err != nil {
			rd.gap("get", "gateways", ns, err, "the parent Gateway "+key+" was not judged")
			continue
		}
		var gw gwv1.Gateway
		if err := fromUnstructured(u, &gw); err != nil {
			rd.gap("get", "gateways", ns, err, "the parent Gateway "+key+" was not judged")
			continue
		}
		rd.in.Gateways = append(rd.in.Gateways, gw)
	}
}

// readAttachedRoutes lists every served route kind in every namespace and
// keeps the routes that name gw as a parent.
func (rd *reader) readAttachedRoutes(ctx context.Context, gw *gwv1.Gateway) {
	for _, kind := range RouteKinds {
		gvr, ok := rd.kinds[kind]
		if !ok {
			continue
		}
		list, err := rd.Dynamic.Resource(gvr).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			rd.gap("list", gvr.Resource, "", err, "routes of kind "+kind+" attached to the Gateway were not judged")
			continue
		}
		for i := range list.Items {
			var route Route
			if err := fromUnstructured(&list.Items[i], &route); err != nil {
				continue
			}
			route.Kind = kind
			for _, p := range route.Spec.ParentRefs {
				if isGatewayRef(p) && parentNamespace(p, route.Namespace) == gw.Namespace && string(p.Name) == gw.Name {
					rd.in.Routes = append(rd.in.Routes, route)
					break
				}
			}
		}
	}
	sort.SliceStable(rd.in.Routes, func(i, j int) bool {
		a, b := rd.in.Routes[i], rd.in.Routes[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
}

// readClasses lists every GatewayClass: the Gateways' own, and the others
// that tell whether their controller runs at all (it accepted some class).
func (rd *reader) readClasses(ctx context.Context) {
	gvr, ok := rd.kinds["GatewayClass"]
	if !ok || len(rd.in.Gateways) == 0 {
		return
	}
	list, err := rd.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		rd.gap("list", "gatewayclasses", "", err, "the GatewayClasses were not judged")
		return
	}
	for i := range list.Items {
		var gc gwv1.GatewayClass
		if err := fromUnstructured(&list.Items[i], &gc); err == nil {
			rd.in.GatewayClasses = append(rd.in.GatewayClasses, gc)
		}
	}
}

// readBackends gets each backend Service of the route, and the
// ReferenceGrants of every other namespace a backend lives in.
func (rd *reader) readBackends(ctx context.Context, route *Route) {
	grantsRead := map[string]bool{}
	for _, rule := range route.Spec.Rules {
		for _, b := range rule.BackendRefs {
			if !isServiceRef(b.BackendObjectReference) {
				continue
			}
			ns := route.Namespace
			if b.Namespace != nil && *b.Namespace != "" {
				ns = string(*b.Namespace)
			}
			rd.readService(ctx, ns, string(b.Name))
			if ns != route.Namespace && !grantsRead[ns] {
				grantsRead[ns] = true
				rd.readGrants(ctx, ns)
			}
		}
	}
}

func (rd *reader) readService(ctx context.Context, ns, name string) {
	key := serviceKey(ns, name)
	if _, done := rd.in.Services[key]; done {
		return
	}
	svc, err := rd.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		rd.in.Services[key] = nil
	case err != nil:
		rd.gap("get", "services", ns, err, "backend Service "+key+" was not judged")
	default:
		trimMeta(&svc.ObjectMeta)
		rd.in.Services[key] = svc
	}
}

func (rd *reader) readGrants(ctx context.Context, ns string) {
	gvr, ok := rd.kinds["ReferenceGrant"]
	if !ok {
		return // no grant can exist: the judge says none allows the reference
	}
	list, err := rd.Dynamic.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		rd.gap("list", "referencegrants", ns, err, "whether a cross-namespace backend in "+ns+" is granted was not judged")
		return
	}
	for i := range list.Items {
		var g gwv1.ReferenceGrant
		if err := fromUnstructured(&list.Items[i], &g); err == nil {
			rd.in.ReferenceGrants = append(rd.in.ReferenceGrants, g)
		}
	}
}

// readNamespaceLabels reads the routes' namespaces' labels, only when a
// listener admits routes by namespace selector.
func (rd *reader) readNamespaceLabels(ctx context.Context) {
	needed := false
	for _, gw := range rd.in.Gateways {
		for _, l := range gw.Spec.Listeners {
			if ar := l.AllowedRoutes; ar != nil && ar.Namespaces != nil && ar.Namespaces.From != nil && *ar.Namespaces.From == gwv1.NamespacesFromSelector {
				needed = true
			}
		}
	}
	if !needed {
		return
	}
	rd.in.NamespaceLabels = map[string]map[string]string{}
	for _, route := range rd.in.Routes {
		if _, done := rd.in.NamespaceLabels[route.Namespace]; done {
			continue
		}
		ns, err := rd.Client.CoreV1().Namespaces().Get(ctx, route.Namespace, metav1.GetOptions{})
		if err != nil {
			rd.gap("get", "namespaces", "", err, "whether a listener's namespace selector admits namespace "+route.Namespace+" was not judged")
			continue
		}
		rd.in.NamespaceLabels[route.Namespace] = ns.Labels
	}
}

// findDataPlane looks for the gateway's running data-plane Pods: by the
// --gateway-pods selector in every namespace, or else by the label GEP-1762
// says an in-cluster implementation puts on everything it generates for a
// Gateway, in that Gateway's namespace. Neither is universal (an
// implementation may run its data plane elsewhere, or on the nodes), which
// is why the search and its result are reported, never assumed.
func (rd *reader) findDataPlane(ctx context.Context, selector string) {
	dp := &DataPlane{Selector: selector, Source: "--gateway-pods"}
	if selector == "" {
		if len(rd.in.Gateways) == 0 {
			if rd.in.Entry.Kind == KindIngress {
				rd.in.DataPlane = &DataPlane{Source: "none"}
			}
			return
		}
		gw := rd.in.Gateways[0]
		dp.Selector = labels.Set{gwv1.GatewayNameLabelKey: gw.Name}.String()
		dp.Namespace = gw.Namespace
		dp.Source = "Gateway " + gw.Namespace + "/" + gw.Name
	}
	rd.in.DataPlane = dp
	pods, err := rd.Client.CoreV1().Pods(dp.Namespace).List(ctx, metav1.ListOptions{LabelSelector: dp.Selector})
	if err != nil {
		rd.gap("list", "pods", dp.Namespace, err, "the gateway's data-plane Pods were not found")
		return
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			dp.Pods = append(dp.Pods, p.Namespace+"/"+p.Name)
		}
	}
	slices.Sort(dp.Pods)
}

// gap records a failed read.
func (rd *reader) gap(verb, resource, ns string, err error, impact string) {
	g := Gap{Verb: verb, Resource: resource, Namespace: ns, Error: err.Error(), Impact: impact}
	var status apierrors.APIStatus
	if errors.As(err, &status) && apierrors.IsForbidden(err) {
		g.Forbidden = true
	}
	rd.in.Gaps = append(rd.in.Gaps, g)
}

// isGatewayRef reports whether a parentRef names a Gateway (the default).
func isGatewayRef(p gwv1.ParentReference) bool {
	return (p.Group == nil || *p.Group == GroupName) && (p.Kind == nil || *p.Kind == KindGateway)
}

// isServiceRef reports whether a backendRef names a core Service (the default).
func isServiceRef(b gwv1.BackendObjectReference) bool {
	return (b.Group == nil || *b.Group == "" || *b.Group == "core") && (b.Kind == nil || *b.Kind == "Service")
}

func parentNamespace(p gwv1.ParentReference, routeNamespace string) string {
	if p.Namespace != nil && *p.Namespace != "" {
		return string(*p.Namespace)
	}
	return routeNamespace
}

func (rd *reader) readIngress(ctx context.Context, opts ReadOptions) error {
	entry := rd.in.Entry
	ing, err := rd.Client.NetworkingV1().Ingresses(entry.Namespace).Get(ctx, entry.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &NotFoundError{Entry: entry}
	}
	if err != nil {
		return fmt.Errorf("cannot get ingress %s/%s: %w", entry.Namespace, entry.Name, err)
	}
	trimMeta(&ing.ObjectMeta)
	rd.in.Ingress = ing
	classes, err := rd.Client.NetworkingV1().IngressClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		rd.gap("list", "ingressclasses", "", err, "the Ingress's class was not judged")
	} else {
		for _, c := range classes.Items {
			trimMeta(&c.ObjectMeta)
			rd.in.IngressClasses = append(rd.in.IngressClasses, c)
		}
	}
	for _, b := range ingressBackends(ing) {
		if b.backend.Service != nil {
			rd.readService(ctx, ing.Namespace, b.backend.Service.Name)
		}
	}
	secrets := metadataResource(rd.Metadata, ing.Namespace)
	for _, t := range ing.Spec.TLS {
		if t.SecretName == "" {
			continue
		}
		if rd.in.TLSSecrets == nil {
			rd.in.TLSSecrets = map[string]bool{}
		}
		// Metadata only: whether the Secret exists is all the check needs,
		// and its keys must never reach a trace or a saved bundle.
		_, err := secrets.Get(ctx, t.SecretName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			rd.in.TLSSecrets[t.SecretName] = false
		case err != nil:
			rd.gap("get", "secrets", ing.Namespace, err, "whether TLS Secret "+t.SecretName+" exists was not judged")
		default:
			rd.in.TLSSecrets[t.SecretName] = true
		}
	}
	if opts.FindDataPlane {
		rd.findDataPlane(ctx, opts.GatewayPods)
	}
	return nil
}

// metadataResource is the Secrets of ns through the metadata client.
func metadataResource(m metadata.Interface, ns string) metadata.ResourceInterface {
	return m.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace(ns)
}

// Names lists (one page of at most limit) the names of kind in namespace,
// for shell completion; a kind the cluster does not serve has none.
func (r *Reader) Names(ctx context.Context, kind, namespace string, limit int64) ([]string, error) {
	rd := &reader{Reader: r}
	kinds, err := rd.servedKinds(ctx)
	if err != nil {
		return nil, err
	}
	gvr, ok := kinds[kind]
	if !ok {
		return nil, nil
	}
	list, err := r.Dynamic.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: limit})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, it := range list.Items {
		names = append(names, it.GetName())
	}
	return names, nil
}

// trimMeta drops what no check reads and a saved trace must not carry: the
// managed field sets and kubectl's last-applied copy of the object.
func trimMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	delete(m.Annotations, corev1.LastAppliedConfigAnnotation)
}
