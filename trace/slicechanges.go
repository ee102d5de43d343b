package trace

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
)

// readChange is what changed in the Service's EndpointSlices while the
// nodes were read, for one IP family on one datapath.
type readChange struct {
	addresses map[string]bool
	why       string
}

// readChanges is the change of family's slices during the read that can
// explain mode's datapath disagreeing with the API read; the zero value
// when there was none or mode's programmer is unknown.
func (nj *nodeJudge) readChanges(mode collectorapi.DatapathMode, family corev1.IPFamily) readChange {
	var rc readChange
	if !programmed.SlicesDriven(mode) {
		return rc
	}
	var names []string
	rc.addresses, names = nj.changedDuringRead(family)
	if len(rc.addresses) > 0 {
		rc.why = fmt.Sprintf("EndpointSlice %s while the nodes were read, so the datapath may already hold a newer state for these endpoints than the API read", listNames(names))
	}
	return rc
}

// split divides the endpoints ("ip:port") that disagree with the API read
// into the ones explained without a fault, with why, and the rest: every
// one while kube-proxy may not have applied the Service's latest change
// (pending, from syncPending), otherwise those whose address changed
// during the read.
func (rc readChange) split(endpoints []string, pending string) (excused, faulty []string, why string) {
	if pending != "" {
		excused, why = endpoints, pending
		if rc.why != "" {
			for _, ep := range endpoints {
				if rc.addresses[endpointHost(ep)] {
					why += "; " + rc.why
					break
				}
			}
		}
		return excused, nil, why
	}
	for _, ep := range endpoints {
		if rc.addresses[endpointHost(ep)] {
			excused = append(excused, ep)
		} else {
			faulty = append(faulty, ep)
		}
	}
	if len(excused) > 0 {
		why = rc.why
	}
	return excused, faulty, why
}

// changedDuringRead are the endpoint addresses (unmapped) whose slice
// entry changed, appeared or went away while the nodes were read, in
// family's slices ("": every family), with the slices' changes named; nil
// when there were none.
func (nj *nodeJudge) changedDuringRead(family corev1.IPFamily) (addresses map[string]bool, names []string) {
	for _, c := range nj.in.SlicesChangedDuringRead {
		if c.Family != "" && family != "" && c.Family != family {
			continue
		}
		names = append(names, fmt.Sprintf("%s %s", c.Slice, strings.ToLower(string(c.Type))))
		for _, a := range c.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				a = ip.Unmap().String()
			}
			if addresses == nil {
				addresses = map[string]bool{}
			}
			addresses[a] = true
		}
	}
	return addresses, names
}

// endpointHost is the address of an "ip:port" endpoint, unmapped.
func endpointHost(ep string) string {
	h, _, _ := net.SplitHostPort(probeKey(ep))
	return h
}
