// Package fakegateway builds a frontdoor.Reader over fake clients: a fake
// clientset for the core objects, a fake dynamic client serving the Gateway
// API kinds at the versions a test chooses (found through the clientset's
// fake discovery, as Read finds them on a cluster), and a fake metadata
// client for Secrets.
package fakegateway

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
)

// Resources are the Gateway API kinds and their plural resource names.
var Resources = map[string]string{
	"Gateway": "gateways", "GatewayClass": "gatewayclasses", "ReferenceGrant": "referencegrants",
	frontdoor.KindHTTPRoute: "httproutes", frontdoor.KindGRPCRoute: "grpcroutes",
	frontdoor.KindTLSRoute: "tlsroutes", frontdoor.KindTCPRoute: "tcproutes",
}

// Served maps each served kind to its version; ServedV1 is a current install
// (the experimental kinds at v1alpha2).
var ServedV1 = map[string]string{
	"Gateway": "v1", "GatewayClass": "v1", "ReferenceGrant": "v1beta1",
	frontdoor.KindHTTPRoute: "v1", frontdoor.KindGRPCRoute: "v1",
	frontdoor.KindTLSRoute: "v1alpha2", frontdoor.KindTCPRoute: "v1alpha2",
}

// Reader wires client, the served kinds and the Gateway API objects (typed
// gateway-api values or frontdoor.Routes, converted to unstructured), and
// the Secrets that exist, by namespace/name.
func Reader(client *fake.Clientset, served map[string]string, secrets []string, objs ...any) *frontdoor.Reader {
	byVersion := map[string][]metav1.APIResource{}
	listKinds := map[schema.GroupVersionResource]string{}
	for kind, version := range served {
		res := Resources[kind]
		byVersion[version] = append(byVersion[version], metav1.APIResource{Name: res, Kind: kind,
			Namespaced: kind != "GatewayClass", Verbs: metav1.Verbs{"get", "list"}})
		listKinds[schema.GroupVersionResource{Group: frontdoor.GroupName, Version: version, Resource: res}] = kind + "List"
	}
	disc := client.Discovery().(*fakediscovery.FakeDiscovery)
	for _, v := range []string{"v1", "v1beta1", "v1alpha2"} {
		if rs, ok := byVersion[v]; ok {
			disc.Resources = append(disc.Resources, &metav1.APIResourceList{GroupVersion: frontdoor.GroupName + "/" + v, APIResources: rs})
		}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			panic(err)
		}
		kind := kindOf(o)
		version, ok := served[kind]
		if !ok {
			panic(fmt.Sprintf("fakegateway: %s is not served", kind))
		}
		obj := &unstructured.Unstructured{Object: u}
		obj.SetAPIVersion(frontdoor.GroupName + "/" + version)
		obj.SetKind(kind)
		// By resource: the tracker's guess from the kind spells Gateway's
		// plural "gatewaies".
		gvr := schema.GroupVersionResource{Group: frontdoor.GroupName, Version: version, Resource: Resources[kind]}
		if err := dyn.Tracker().Create(gvr, obj, obj.GetNamespace()); err != nil {
			panic(err)
		}
	}
	var meta []runtime.Object
	for _, s := range secrets {
		ns, name, _ := strings.Cut(s, "/")
		meta = append(meta, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
	mscheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(mscheme); err != nil {
		panic(err)
	}
	return &frontdoor.Reader{
		Client:    client,
		Dynamic:   dyn,
		Discovery: disc,
		Metadata:  metadatafake.NewSimpleMetadataClient(mscheme, meta...),
	}
}

// kindOf is the Gateway API kind of a typed value.
func kindOf(o any) string {
	if r, ok := o.(*frontdoor.Route); ok {
		return r.Kind
	}
	t := fmt.Sprintf("%T", o)
	return t[strings.LastIndex(t, ".")+1:]
}
