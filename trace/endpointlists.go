package trace

import (
	"fmt"
	"hash/maphash"
	"net"
	"slices"
	"sort"
	"strconv"

	"github.com/svctrace/kubectl-svctrace/trace/input"

	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// setDiff is what want holds and got lacks, and what got holds beyond
// want, each sorted.
func setDiff(want, got map[string]bool) (missing, extra []string) {
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return missing, extra
}

// A trace of 1,000 nodes and 5,000 endpoints would otherwise hold, and
// print, each node's copy of the same 5,000 expected endpoints. Nodes with
// the same expectation share its endpoint lists (internLists), what is
// derived from a list is derived once (endpointSetOf), and in a large trace
// the evidence names a shared list instead of repeating it
// (ServiceTrace.EndpointSets): the result grows with nodes plus endpoints,
// not with their product, and every node keeps its own findings.

// endpointListKey identifies one endpoint list: lists are never changed
// after they are computed, and nodes with equal lists share one.
type endpointListKey struct {
	first *expect.ExpectedEndpoint
	n     int
}

// endpointSet is an endpoint list as the comparisons read it.
type endpointSet struct {
	// strings are kube-proxy's endpoint strings (ip:port), sorted.
	strings []string
	has     map[string]bool
	// byIP maps an endpoint's IP to its endpoint string.
	byIP map[string]string
	// id names the list in ServiceTrace.EndpointSets once evidence
	// referred to it there.
	id string
}

var emptyEndpointSet = &endpointSet{has: map[string]bool{}, byIP: map[string]string{}}

// endpointSetOf returns eps as an endpointSet, built once per distinct list.
func (nj *nodeJudge) endpointSetOf(eps []expect.ExpectedEndpoint) *endpointSet {
	if len(eps) == 0 {
		return emptyEndpointSet
	}
	key := endpointListKey{&eps[0], len(eps)}
	if s := nj.endpointSets[key]; s != nil {
		return s
	}
	s := &endpointSet{strings: make([]string, len(eps)), has: make(map[string]bool, len(eps)), byIP: make(map[string]string, len(eps))}
	for i, e := range eps {
		str := net.JoinHostPort(e.IP, strconv.Itoa(int(e.Port)))
		s.strings[i] = str
		s.has[str] = true
		s.byIP[e.IP] = str
	}
	slices.Sort(s.strings)
	if nj.endpointSets == nil {
		nj.endpointSets = map[endpointListKey]*endpointSet{}
	}
	nj.endpointSets[key] = s
	return s
}

// internLists makes every endpoint list of the expectations that equals an
// earlier one the earlier one, so equal lists are held once however many
// nodes have them.
func (nj *nodeJudge) internLists(pes []expect.PortExpectation) {
	if nj.lists == nil {
		nj.lists = map[uint64][][]expect.ExpectedEndpoint{}
	}
	intern := func(l []expect.ExpectedEndpoint) []expect.ExpectedEndpoint {
		if len(l) == 0 {
			return l
		}
		var h maphash.Hash
		h.SetSeed(nj.listSeed)
		for _, e := range l {
			h.WriteString(e.IP)
			h.WriteString(e.Node)
			fmt.Fprintf(&h, "|%d|%t%t%t|", e.Port, e.Ready, e.Serving, e.Terminating)
		}
		sum := h.Sum64()
		for _, prev := range nj.lists[sum] {
			if slices.Equal(prev, l) {
				return prev
			}
		}
		nj.lists[sum] = append(nj.lists[sum], l)
		return l
	}
	for i := range pes {
		pe := &pes[i]
		pe.Cluster = intern(pe.Cluster)
		pe.Local = intern(pe.Local)
		pe.Internal = intern(pe.Internal)
		pe.External = intern(pe.External)
	}
}

// sharesLists says whether evidence names shared endpoint lists rather
// than listing them: only in a trace whose nodes × endpoints exceed what
// the endpoint grid spells out (maxMatrixCells), so a small trace's
// evidence stays self-contained.
func (nj *nodeJudge) sharesLists() bool {
	return nj.nodeCount*endpointCount(nj.in) > maxMatrixCells
}

// endpointsField is an evidence field listing set: the endpoints
// themselves, or in a large trace the name of the shared list that holds
// them (report.Field.Set).
func (nj *nodeJudge) endpointsField(key string, set *endpointSet) report.Field {
	if !nj.sharesLists() || len(set.strings) <= maxListed {
		return fieldItems(key, set.strings)
	}
	return report.Field{Key: key, Value: fmt.Sprintf("%d endpoints", len(set.strings)), Set: nj.shareSet(set)}
}

// missingField lists the endpoints of want a node does not program. In a
// large trace, when they are most of want, it names want's shared list and
// the few it does program (Except), so a node that programs none of 5,000
// endpoints is one reference, not 5,000 strings.
func (nj *nodeJudge) missingField(want *endpointSet, missing []string) report.Field {
	if !nj.sharesLists() || len(missing) <= maxListed || 2*len(missing) < len(want.strings) {
		return fieldItems("missing", missing)
	}
	except := []string{}
	if len(missing) < len(want.strings) {
		gone := make(map[string]bool, len(missing))
		for _, m := range missing {
			gone[m] = true
		}
		for _, e := range want.strings {
			if !gone[e] {
				except = append(except, e)
			}
		}
	}
	f := report.Field{Key: "missing", Value: fmt.Sprintf("%d endpoints", len(missing)), Set: nj.shareSet(want)}
	if len(except) > 0 {
		f.Except = except
	}
	return f
}

// shareSet adds set to the trace's shared lists the first time evidence
// names it and returns its ID.
func (nj *nodeJudge) shareSet(set *endpointSet) string {
	if set.id == "" {
		set.id = fmt.Sprintf("set-%d", len(nj.t.EndpointSets)+1)
		nj.t.EndpointSets = append(nj.t.EndpointSets, report.EndpointSet{ID: set.id, Endpoints: set.strings})
	}
	return set.id
}

// endpointCount is the number of endpoints of the Service's slices.
func endpointCount(in *input.Input) int {
	n := 0
	for i := range in.Slices {
		n += len(in.Slices[i].Endpoints)
	}
	return n
}
