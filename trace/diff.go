package trace

import (
	"slices"
	"time"
)

// DiffKind identifies a comparison of two traces.
const DiffKind = "ServiceTraceDiff"

// A finding is a check that says something is or may be wrong: status warn,
// fail or unknown. Passing and skipped checks are not findings.
func isFinding(c Check) bool {
	return c.Status == StatusWarn || c.Status == StatusFail || c.Status == StatusUnknown
}

// TraceDiff compares two traces, before and after (a rollout, a fix; or
// node A's view against node B's): which findings appeared, which went and
// which changed, and how the layers and the verdict moved. A finding is
// identified by its layer, code and node; when one trace has several
// findings with the same identity (one per port, say), those with the same
// message are paired first, the rest in order.
type TraceDiff struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Before     DiffSide    `json:"before"`
	After      DiffSide    `json:"after"`
	Added      []Finding   `json:"added"`
	Gone       []Finding   `json:"gone"`
	Changed    []Change    `json:"changed"`
	Layers     []LayerMove `json:"layers,omitempty"`
}

// DiffSide is what identifies one of the compared traces.
type DiffSide struct {
	// Source is the file or bundle directory the trace was read from.
	Source  string     `json:"source,omitempty"`
	Service ServiceRef `json:"service"`
	Time    time.Time  `json:"time"`
	Verdict Verdict    `json:"verdict"`
}

// ServiceRef names a traced Service; UID tells a recreated Service apart.
type ServiceRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// Finding is one check of a trace, with the layer it belongs to.
type Finding struct {
	Layer    LayerName `json:"layer"`
	Code     string    `json:"code"`
	Node     string    `json:"node,omitempty"`
	Status   Status    `json:"status"`
	Severity Severity  `json:"severity"`
	Title    string    `json:"title"`
	Message  string    `json:"message"`
}

// Change is a finding present in both traces whose status or message
// differs.
type Change struct {
	Layer  LayerName `json:"layer"`
	Code   string    `json:"code"`
	Node   string    `json:"node,omitempty"`
	Before Finding   `json:"before"`
	After  Finding   `json:"after"`
}

// LayerMove is a layer whose status differs between the traces.
type LayerMove struct {
	Name   LayerName `json:"name"`
	Before Status    `json:"before"`
	After  Status    `json:"after"`
}

// Empty reports whether the traces agree: no finding added, gone or
// changed, no layer moved, the same verdict.
func (d *TraceDiff) Empty() bool {
	return len(d.Added) == 0 && len(d.Gone) == 0 && len(d.Changed) == 0 && len(d.Layers) == 0 &&
		d.Before.Verdict.Status == d.After.Verdict.Status && d.Before.Verdict.Fingerprint == d.After.Verdict.Fingerprint
}

type findingKey struct {
	layer LayerName
	code  string
	node  string
}

// Diff compares before with after. Added, Gone and Changed are in the
// order of after's layers and checks (Gone in before's); none is nil, so
// the JSON always has the three lists.
func Diff(before, after *ServiceTrace) *TraceDiff {
	d := &TraceDiff{
		APIVersion: APIVersion, Kind: DiffKind,
		Before:  side(before),
		After:   side(after),
		Added:   []Finding{},
		Gone:    []Finding{},
		Changed: []Change{},
	}
	old := map[findingKey][]Finding{}
	var oldOrder []findingKey
	for _, f := range findings(before) {
		k := keyOf(f)
		if _, ok := old[k]; !ok {
			oldOrder = append(oldOrder, k)
		}
		old[k] = append(old[k], f)
	}
	cur := map[findingKey][]Finding{}
	var curOrder []findingKey
	for _, f := range findings(after) {
		k := keyOf(f)
		if _, ok := cur[k]; !ok {
			curOrder = append(curOrder, k)
		}
		cur[k] = append(cur[k], f)
	}
	for _, k := range curOrder {
		was, now := slices.Clone(old[k]), slices.Clone(cur[k])
		// Same message: the same finding, unchanged unless its status moved.
		for i := 0; i < len(now); i++ {
			j := slices.IndexFunc(was, func(f Finding) bool { return f.Message == now[i].Message })
			if j < 0 {
				continue
			}
			if was[j] != now[i] {
				d.Changed = append(d.Changed, Change{Layer: k.layer, Code: k.code, Node: k.node, Before: was[j], After: now[i]})
			}
			was = slices.Delete(was, j, j+1)
			now = slices.Delete(now, i, i+1)
			i--
		}
		for i, f := range now {
			if i < len(was) {
				d.Changed = append(d.Changed, Change{Layer: k.layer, Code: k.code, Node: k.node, Before: was[i], After: f})
				continue
			}
			d.Added = append(d.Added, f)
		}
		if len(was) > len(now) {
			old[k] = was[len(now):]
		} else {
			delete(old, k)
		}
	}
	for _, k := range oldOrder {
		d.Gone = append(d.Gone, old[k]...) // what pairing left
	}
	for _, name := range LayerOrder {
		b, a := before.Layer(name), after.Layer(name)
		var bs, as Status
		if b != nil {
			bs = b.Status
		}
		if a != nil {
			as = a.Status
		}
		if bs != as {
			d.Layers = append(d.Layers, LayerMove{Name: name, Before: bs, After: as})
		}
	}
	return d
}

func side(t *ServiceTrace) DiffSide {
	return DiffSide{Service: ServiceRef{Namespace: t.Service.Namespace, Name: t.Service.Name, UID: t.Service.UID},
		Time: t.Metadata.Time, Verdict: t.Verdict}
}

func keyOf(f Finding) findingKey { return findingKey{f.Layer, f.Code, f.Node} }

func findings(t *ServiceTrace) []Finding {
	var out []Finding
	for _, l := range t.Layers {
		if l.Status == StatusSkipped {
			continue
		}
		for _, c := range l.Checks {
			if isFinding(c) {
				out = append(out, Finding{Layer: l.Name, Code: c.Code, Node: c.Node, Status: c.Status,
					Severity: c.Severity, Title: c.Title, Message: c.Message})
			}
		}
	}
	return out
}
