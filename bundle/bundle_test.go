package bundle

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

const secretValue = "s3cr3t-db-password"

func ptr[T any](v T) *T { return &v }

var at = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// objects is default/web with one Pod whose spec carries a secret in an env
// value, a probe header and kubectl's last-applied annotation.
func objects(ready bool) []runtime.Object {
	lastApplied := map[string]string{corev1.LastAppliedConfigAnnotation: `{"env":[{"name":"DB_PASSWORD","value":"` + secretValue + `"}]}`}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", Annotations: lastApplied},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"},
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", Labels: map[string]string{"app": "web"},
		Annotations: lastApplied,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
			Time: &metav1.Time{Time: time.Date(2026, 12, 5, 13, 56, 30, 0, time.UTC)}, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:containers":{}}}`)}}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app",
			Env:   []corev1.EnvVar{{Name: "DB_PASSWORD", Value: secretValue}, {Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080),
				HTTPHeaders: []corev1.HTTPHeader{{Name: "Authorization", Value: "Bearer " + secretValue}}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.5", PodIPs: []corev1.PodIP{{IP: "10.244.1.5"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}}}}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: ptr("node-a"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1"}}}}
	return []runtime.Object{svc, pod, slice,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}
}

// nodeReport is what a node side could return: one node observed, one not.
func nodeReport() *plan.NodeReport {
	return &plan.NodeReport{
		Collector: &report.CollectorRun{Image: "svctrace.local/collector:dev", Namespace: "svctrace-system", Profile: "netadmin",
			Nodes: []report.CollectorNode{{Node: "node-a", Roles: []string{plan.RoleEndpoints}, Inspected: true}}},
		Nodes: []plan.NodeView{
			{Node: "node-a", Roles: []string{plan.RoleEndpoints}, Profile: "netadmin", Observation: &collectorapi.Observation{
				APIVersion: collectorapi.ObservationAPIVersion, Kind: collectorapi.ObservationKind, NodeName: "node-a",
				Service: "default/web", CollectedAt: at}},
			{Node: "node-b", Roles: []string{plan.RoleSelected}, Failure: "collector Pod did not start: ImagePullBackOff"},
		},
	}
}

func collect(t *testing.T, objs []runtime.Object, opts trace.Options) *input.Input {
	t.Helper()
	in, _, err := trace.Collect(context.Background(), fake.NewClientset(objs...), "default", "web", opts)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSavedTraceJudgesTheSame: a bundle written and read back judges to
// the result the live trace printed, with and without a node report, and
// Read gives back what was written.
func TestSavedTraceJudgesTheSame(t *testing.T) {
	for _, tt := range []struct {
		name   string
		ready  bool
		noNode bool
		report *plan.NodeReport
	}{
		{name: "no ready endpoint, no node", ready: false, noNode: true},
		{name: "healthy with a node report", ready: true, report: nodeReport()},
		{name: "node report failed", ready: true, report: &plan.NodeReport{Failure: "pods is forbidden"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := trace.Options{Now: func() time.Time { return at }, Version: "v9", ClusterDomain: "cluster.local",
				NoNode: tt.noNode, Port: "http", Context: "prod", Nodes: plan.NodeSelection{Nodes: []string{"node-b"}}}
			in := collect(t, objects(tt.ready), opts)
			live := trace.Assemble(in, tt.report, opts)
			b, err := New(in, tt.report, opts, live)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "incident")
			if err := b.Write(dir); err != nil {
				t.Fatal(err)
			}
			got, err := Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if jsonOf(t, got.Result) != jsonOf(t, live) {
				t.Errorf("result.json differs from the live result")
			}
			if a := got.Analyze("v9"); jsonOf(t, a) != jsonOf(t, live) {
				t.Errorf("re-judged result differs:\nlive:     %s\nanalyzed: %s", jsonOf(t, live), jsonOf(t, a))
			}
			if (got.Report == nil) != (tt.report == nil) {
				t.Fatalf("report read back %v, written %v", got.Report, tt.report)
			}
			if tt.report != nil && jsonOf(t, got.Report) != jsonOf(t, tt.report) {
				t.Errorf("node report read back as %s, want %s", jsonOf(t, got.Report), jsonOf(t, tt.report))
			}
			m := got.Manifest
			if m.Options.Port != "http" || m.Options.Context != "prod" || !m.Options.Time.Equal(at) || m.SvctraceVersion != "v9" ||
				m.Service != (report.ObjectRef{Namespace: "default", Name: "web"}) || !slices.Equal(m.Options.Nodes, []string{"node-b"}) {
				t.Errorf("manifest %+v", m)
			}
			if a := got.Analyze("v10"); a.Metadata.SvctraceVersion != "v10" || !a.Metadata.Time.Equal(at) {
				t.Errorf("re-judged by v10: metadata %+v", a.Metadata)
			}
		})
	}
}

// TestBundleHoldsNoSecret: the planted secret is in the cluster objects (an
// env value, a probe header, the last-applied annotation) and in no file of
// the bundle; the env variable names and the secretKeyRef stay.
func TestBundleHoldsNoSecret(t *testing.T) {
	opts := trace.Options{Now: func() time.Time { return at }, Version: "v9", NoNode: true}
	in := collect(t, objects(true), opts)
	if !strings.Contains(jsonOf(t, in), secretValue) {
		t.Fatal("the fixture plants no secret in the input: the test proves nothing")
	}
	from := &report.PolicyClient{Pod: in.Pods[0].DeepCopy()}
	opts.From = from
	b, err := New(in, nil, opts, trace.Assemble(in, nil, opts))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	files, _ := os.ReadDir(dir)
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), secretValue) {
			t.Errorf("%s holds the secret", f.Name())
		}
		if strings.Contains(string(data), `"fieldsV1"`) {
			t.Errorf("%s holds managedFields' field sets", f.Name())
		}
		if info, _ := f.Info(); info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f.Name(), info.Mode().Perm())
		}
	}
	if want := []string{ManifestFile, InputFile, ResultFile}; !slices.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
	input, _ := os.ReadFile(filepath.Join(dir, InputFile))
	// The managers' times stay: the judge's sync-lag excuse reads them.
	for _, keep := range []string{`"DB_PASSWORD"`, `"FROM_SECRET"`, `"secretKeyRef"`, `"/ready"`, `"2026-12-05T13:56:30Z"`} {
		if !strings.Contains(string(input), keep) {
			t.Errorf("input.json lost %s", keep)
		}
	}
	if !strings.Contains(jsonOf(t, in), secretValue) || !strings.Contains(jsonOf(t, from), secretValue) {
		t.Error("New redacted the caller's input instead of a copy")
	}
}

func TestWriteRefusesAnExistingBundle(t *testing.T) {
	opts := trace.Options{Now: func() time.Time { return at }, NoNode: true}
	in := collect(t, objects(true), opts)
	b, err := New(in, nil, opts, trace.Assemble(in, nil, opts))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(dir); err == nil || !strings.Contains(err.Error(), "already holds a saved trace") {
		t.Errorf("second Write: %v", err)
	}
}

func TestReadRejectsOtherDocuments(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "is not a saved trace") {
		t.Errorf("empty dir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"apiVersion":"svctrace.dev/v1beta1","kind":"TraceBundle"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "v1beta1") {
		t.Errorf("other apiVersion: %v", err)
	}
	if IsBundle(t.TempDir()) || !IsBundle(dir) {
		t.Error("IsBundle")
	}
}
