package trace

import (
	"regexp"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

var fingerprintFormat = regexp.MustCompile(`^[0-9a-f]{32}$`)

func withUID(uid types.UID) func(*corev1.Service) {
	return func(s *corev1.Service) { s.UID = uid }
}

// staleIPT is n1's rules with one endpoint missing and one that is gone.
func staleIPT() *collectorapi.IPTablesObservation {
	return &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
		jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-9", "10.244.9.9:8080", 0.5))}}
}

func wrongPortIPT() *collectorapi.IPTablesObservation {
	return &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
		jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-2", "10.244.2.7:9090", 0.5))}}
}

// faultTrace traces web with uid on n1 and n2, the given rules on each, at
// the given time; reversed lists the Pods, the slice's endpoints and the
// node views in the opposite order.
func faultTrace(t *testing.T, uid types.UID, n1, n2 *collectorapi.IPTablesObservation, at time.Time, reversed bool) *report.ServiceTrace {
	t.Helper()
	in := nodeInput(withUID(uid))
	o1 := observation(t, collectorapi.ModeIPTables, n1, nil)
	o2 := observation(t, collectorapi.ModeIPTables, n2, nil)
	o1.CollectedAt, o2.CollectedAt = at, at
	views := []plan.NodeView{{Node: "n1", Observation: o1}, {Node: "n2", Observation: o2}}
	if reversed {
		slices.Reverse(in.Pods)
		slices.Reverse(in.Slices[0].Endpoints)
		slices.Reverse(views)
	}
	tr := Assemble(in, &plan.NodeReport{Nodes: views}, Options{Now: func() time.Time { return at }})
	assertCatalogued(t, tr)
	return tr
}

func TestVerdictFingerprint(t *testing.T) {
	t1 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	t2 := t1.Add(26 * time.Hour)

	first := faultTrace(t, "uid-web", staleIPT(), healthyIPT(), t1, false)
	v := first.Verdict
	if v.Status != report.StatusFail || v.Code != report.CodeDPMissingEndpoints || v.Node != "n1" {
		t.Fatalf("verdict %s code %q node %q, want fail %s on n1 (%s)", v.Status, v.Code, v.Node, report.CodeDPMissingEndpoints, v.Summary)
	}
	if !fingerprintFormat.MatchString(v.Fingerprint) {
		t.Fatalf("fingerprint %q is not 32 hex digits", v.Fingerprint)
	}
	if first.Service.UID != "uid-web" {
		t.Fatalf("service.uid = %q, want uid-web", first.Service.UID)
	}

	later := faultTrace(t, "uid-web", staleIPT(), healthyIPT(), t2, true)
	if later.Verdict.Fingerprint != v.Fingerprint {
		t.Errorf("same fault a day later with reordered input: fingerprint %s, want %s", later.Verdict.Fingerprint, v.Fingerprint)
	}
	if again := faultTrace(t, "uid-web", staleIPT(), healthyIPT(), t1, false); again.Verdict.Fingerprint != v.Fingerprint {
		t.Errorf("same input twice: fingerprint %s, want %s", again.Verdict.Fingerprint, v.Fingerprint)
	}

	different := []struct {
		name string
		tr   *report.ServiceTrace
		code string
		node string
	}{
		{"same fault on the other node", faultTrace(t, "uid-web", healthyIPT(), staleIPT(), t1, false), report.CodeDPMissingEndpoints, "n2"},
		{"another fault on the same node", faultTrace(t, "uid-web", wrongPortIPT(), healthyIPT(), t1, false), report.CodeDPWrongDNATPort, "n1"},
		{"same fault on a recreated Service", faultTrace(t, "uid-web-2", staleIPT(), healthyIPT(), t1, false), report.CodeDPMissingEndpoints, "n1"},
	}
	seen := map[string]string{v.Fingerprint: "the first fault"}
	for _, d := range different {
		got := d.tr.Verdict
		if got.Code != d.code || got.Node != d.node {
			t.Errorf("%s: code %q node %q, want %s on %s", d.name, got.Code, got.Node, d.code, d.node)
		}
		if prev, dup := seen[got.Fingerprint]; dup {
			t.Errorf("%s: fingerprint %s is the same as for %s", d.name, got.Fingerprint, prev)
		}
		seen[got.Fingerprint] = d.name
	}
}

func TestVerdictFingerprintPassAndNotFound(t *testing.T) {
	healthy := faultTrace(t, "uid-web", healthyIPT(), healthyIPT(), fixedNow(), false)
	if v := healthy.Verdict; v.Status != report.StatusPass || v.Code != "" || v.Node != "" || v.Fingerprint != "" {
		t.Errorf("passing verdict has code %q node %q fingerprint %q, want none", v.Code, v.Node, v.Fingerprint)
	}

	missing := func() *report.ServiceTrace {
		return Assemble(&input.Input{Namespace: "default", Name: "web", ServiceNotFound: true}, nil, Options{Now: fixedNow})
	}
	a, b := missing(), missing()
	if a.Service.UID != "" || a.Verdict.Code != report.CodeSvcNotFound || !fingerprintFormat.MatchString(a.Verdict.Fingerprint) {
		t.Fatalf("not found: uid %q code %q fingerprint %q", a.Service.UID, a.Verdict.Code, a.Verdict.Fingerprint)
	}
	if a.Verdict.Fingerprint != b.Verdict.Fingerprint {
		t.Errorf("not found twice: fingerprints %s and %s", a.Verdict.Fingerprint, b.Verdict.Fingerprint)
	}
}

// TestVerdictCodeWhenNotJudged: an unknown verdict names the first unknown
// check; node layers unknown with no check at all (the collector run failed
// as a whole) leave code empty, and the fingerprint keys on the layer.
func TestVerdictCodeWhenNotJudged(t *testing.T) {
	in := nodeInput(withUID("uid-web"))
	tr := Assemble(in, &plan.NodeReport{Failure: "missing permission: verb create on resource pods"}, Options{Now: fixedNow})
	v := tr.Verdict
	if v.Status != report.StatusUnknown || v.Code != "" || !fingerprintFormat.MatchString(v.Fingerprint) {
		t.Fatalf("verdict %s code %q fingerprint %q, want unknown, no code, a fingerprint", v.Status, v.Code, v.Fingerprint)
	}
	other := Assemble(nodeInput(withUID("uid-web")), &plan.NodeReport{Failure: "image pull failed"}, Options{Now: fixedNow})
	if other.Verdict.Fingerprint != v.Fingerprint {
		t.Errorf("the fingerprint depends on the failure text: %s vs %s", other.Verdict.Fingerprint, v.Fingerprint)
	}
}
