package report

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
	// Nodes are the per-node results of node layers whose status differs
	// (a node's datapath going from pass to fail when its rules change).
	Nodes []NodeMove `json:"nodes,omitempty"`
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

// NodeMove is one node's result in a node layer that differs between the
// traces; an empty status means the node was not in that trace.
type NodeMove struct {
	Layer  LayerName `json:"layer"`
	Node   string    `json:"node"`
	Before Status    `json:"before,omitempty"`
	After  Status    `json:"after,omitempty"`
}

// Empty reports whether the traces agree: no finding added, gone or
// changed, no layer moved, the same verdict.
func (d *TraceDiff) Empty() bool {
	return len(d.Added) == 0 && len(d.Gone) == 0 && len(d.Changed) == 0 && len(d.Layers) == 0 && len(d.Nodes) == 0 &&
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
	for _, name := range slices.Concat([]LayerName{LayerFrontdoor}, LayerOrder) {
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
		d.Nodes = append(d.Nodes, nodeMoves(name, b, a)...)
	}
	return d
}

func nodeMoves(name LayerName, b, a *Layer) []NodeMove {
	was, now := map[string]Status{}, map[string]Status{}
	var names []string
	for _, l := range []*Layer{b, a} {
		if l == nil {
			continue
		}
		for _, n := range l.Nodes {
			if _, seen := was[n.Node]; !seen {
				if _, seen := now[n.Node]; !seen {
					names = append(names, n.Node)
				}
			}
			if l == b {
				was[n.Node] = n.Status
			} else {
				now[n.Node] = n.Status
			}
		}
	}
	slices.Sort(names)
	var out []NodeMove
	for _, n := range names {
		if was[n] != now[n] {
			out = append(out, NodeMove{Layer: name, Node: n, Before: was[n], After: now[n]})
		}
	}
	return out
}

// EndpointChange is one endpoint whose conditions differ between two
// traces, or that appeared or went: a line of a rollout's timeline.
type EndpointChange struct {
	IP   string     `json:"ip"`
	Pod  *ObjectRef `json:"pod,omitempty"`
	Node string     `json:"node,omitempty"`
	// Before and After are EndpointState values; "" when the endpoint was
	// not there.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// EndpointState names an endpoint's conditions as kube-proxy acts on them:
// ready; terminating but still serving (kept only as a fallback);
// terminating; not ready.
func EndpointState(e EndpointSummary) string {
	switch {
	case e.Ready:
		return "ready"
	case e.Terminating && e.Serving:
		return "terminating (serving)"
	case e.Terminating:
		return "terminating"
	case e.Serving:
		return "serving (not ready)"
	}
	return "not ready"
}

// EndpointChanges compares two traces' endpoints by address, in after's
// order then before's.
func EndpointChanges(before, after *ServiceTrace) []EndpointChange {
	key := func(e EndpointSummary) string { return e.IP }
	was := map[string]EndpointSummary{}
	for _, e := range before.Endpoints.Endpoints {
		was[key(e)] = e
	}
	seen := map[string]bool{}
	var out []EndpointChange
	for _, e := range after.Endpoints.Endpoints {
		k := key(e)
		if seen[k] {
			continue
		}
		seen[k] = true
		c := EndpointChange{IP: e.IP, Pod: e.Pod, Node: e.Node, After: EndpointState(e)}
		if old, ok := was[k]; ok {
			c.Before = EndpointState(old)
		}
		if c.Before != c.After {
			out = append(out, c)
		}
	}
	for _, e := range before.Endpoints.Endpoints {
		if k := key(e); !seen[k] {
			seen[k] = true
			out = append(out, EndpointChange{IP: e.IP, Pod: e.Pod, Node: e.Node, Before: EndpointState(e)})
		}
	}
	return out
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
