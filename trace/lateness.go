package trace

import (
	"fmt"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// lateCollector says why a timeout the collector on a node saw is not
// evidence of a fault there, "" when it is. A collector that ran late by
// half its probe timeout or more (Collector.LateMillis, its heartbeat's
// longest delay) was off the CPU for a good part of a probe's window: a
// SYN-ACK or a DNS answer could have arrived and not been read in time,
// and its retry on the same starved node proves no more. A busy but
// healthy node stays far below that: tens of milliseconds on two cores at
// a load average of 16. A collector whose
// own time ran out before the retry (the probe section ended with an
// error and the probe was tried once) did not give the timeout its second
// chance. Such a timeout is judged undetermined, never failed. An
// observation without the measure (an older collector) is read as on time.
// sectionErr is the error of the section the timeout is in.
func lateCollector(obs *collectorapi.Observation, attempts int, sectionErr string) string {
	if obs == nil {
		return ""
	}
	timeout := collectorapi.DefaultProbeTimeoutMillis
	if s := obs.Sections.Probe; s != nil && s.Data != nil && s.Data.TimeoutMillis > 0 {
		// DNS queries wait as long as probes (the request's one timeout).
		timeout = s.Data.TimeoutMillis
	}
	if late := obs.Collector.LateMillis; late > 0 && 2*late >= float64(timeout) {
		return fmt.Sprintf("the collector itself ran %.0f ms late on this node (a probe waits %d ms): the node was too slow to tell a lost answer from a late one", late, timeout)
	}
	if attempts < 2 && sectionErr != "" {
		return "it was not tried again: the collector's time ran out first (" + sectionErr + ")"
	}
	return ""
}
