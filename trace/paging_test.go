package trace

import (
	"context"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/input"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestListsFollowContinue: EndpointSlices come back in two pages (Limit and
// Continue as a real API server pages them); both pages are judged.
func TestListsFollowContinue(t *testing.T) {
	page1 := slice("web-a", "web", "http", 8080, ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true})
	page2 := slice("web-b", "web", "http", 8080, ep{ip: "10.244.2.5", pod: "web-2", node: "node-b", ready: true})
	objs := without(healthy(), "eps", "web-abc")
	client := fake.NewClientset(objs...)
	var limits []int64
	client.PrependReactor("list", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != "default" {
			return false, nil, nil
		}
		opts := a.(k8stesting.ListActionImpl).ListOptions
		limits = append(limits, opts.Limit)
		list := &discoveryv1.EndpointSliceList{}
		switch opts.Continue {
		case "":
			list.Items = []discoveryv1.EndpointSlice{*page1}
			list.Continue = "page-2"
		case "page-2":
			list.Items = []discoveryv1.EndpointSlice{*page2}
		default:
			t.Errorf("unexpected continue token %q", opts.Continue)
		}
		return true, list, nil
	})
	tr, err := Run(context.Background(), client, "default", "web", Options{Now: fixedNow, NoNode: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(limits) != 2 || limits[0] != input.PageSize {
		t.Fatalf("list calls with limits %v, want two pages of %d", limits, input.PageSize)
	}
	if tr.Endpoints.Total != 2 || len(tr.Endpoints.Slices) != 2 || tr.Layer(report.LayerEndpoints).Status != report.StatusPass {
		t.Fatalf("endpoints %+v, layer %s", tr.Endpoints, tr.Layer(report.LayerEndpoints).Status)
	}
	if _, ok := codes(tr, report.LayerEndpoints)[report.CodeEpsReadyPodMissing]; ok {
		t.Fatal("a Pod of page 2 was reported missing")
	}
}
