package input

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClosest(t *testing.T) {
	tests := []struct {
		name  string
		cands []string
		want  []string
	}{
		{"web", []string{"web1", "webapp", "db", "api", "wbe"}, []string{"wbe", "web1", "webapp"}},
		{"frontend", []string{"front-end", "backend", "frontend-v2", "x"}, []string{"front-end", "frontend-v2"}},
		{"db", []string{"redis", "kafka"}, []string{}},
	}
	for _, tc := range tests {
		if got := Closest(tc.name, tc.cands, 3); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Closest(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestClosestPodsSkipsStrangers(t *testing.T) {
	mk := func(name string, labels map[string]string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	pods := []corev1.Pod{
		mk("sick-1", map[string]string{"app": "sick"}),
		mk("broken-1", map[string]string{"app": "broken"}),
		mk("named-1", map[string]string{"app": "named"}),
		mk("nolabel", nil),
	}
	got := closestPods(map[string]string{"app": "brokn"}, pods, 3)
	if len(got) != 1 || got[0].Name != "broken-1" {
		t.Fatalf("got %v", got)
	}
	// a Pod matching one of two keys is close whatever the other value
	got = closestPods(map[string]string{"app": "web", "tier": "front"},
		[]corev1.Pod{mk("web-1", map[string]string{"app": "web", "tier": "backend-service"})}, 3)
	if len(got) != 1 {
		t.Fatalf("got %v", got)
	}
	if d := LabelDiff(map[string]string{"app": "web", "tier": "front"}, map[string]string{"app": "web"}); !reflect.DeepEqual(d, []string{"tier=<missing> (want front)"}) {
		t.Fatalf("LabelDiff %v", d)
	}
}
