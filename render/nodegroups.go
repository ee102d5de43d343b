package render

import (
	"sort"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// nodeGroup is nodes with the same result in one place of the report: the
// same status and reason in a layer or on the path. At a thousand nodes
// the report reads as a few groups and the outliers, not a thousand lines.
type nodeGroup struct {
	status report.Status
	reason string
	nodes  []string
}

// groupNodes groups nodes by status and reason, in their order. A group of
// at least foldRows nodes is a fold; the nodes of smaller groups are
// outliers, one group each. Folds come first, the largest first, then the
// outliers, worst first; ties keep the nodes' order.
func groupNodes(nodes []report.NodeResult) []nodeGroup {
	var groups []*nodeGroup
	byKey := map[string]*nodeGroup{}
	for _, n := range nodes {
		key := string(n.Status) + "\x00" + n.Reason
		if g := byKey[key]; g != nil {
			g.nodes = append(g.nodes, n.Node)
			continue
		}
		g := &nodeGroup{status: n.Status, reason: n.Reason, nodes: []string{n.Node}}
		byKey[key] = g
		groups = append(groups, g)
	}
	var folds, outliers []nodeGroup
	for _, g := range groups {
		if len(g.nodes) >= foldRows {
			folds = append(folds, *g)
			continue
		}
		for _, n := range g.nodes {
			outliers = append(outliers, nodeGroup{status: g.status, reason: g.reason, nodes: []string{n}})
		}
	}
	sort.SliceStable(folds, func(i, j int) bool { return len(folds[i].nodes) > len(folds[j].nodes) })
	sort.SliceStable(outliers, func(i, j int) bool { return rank(outliers[i].status) > rank(outliers[j].status) })
	return append(folds, outliers...)
}
