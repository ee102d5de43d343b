package report

// CollectorRun records how the node layers were observed: which image ran
// where, with which privileges, and which nodes could not be inspected. The
// report states the privileges used, so nobody has to guess what ran on
// their nodes.
type CollectorRun struct {
	Image     string `json:"image"`
	Namespace string `json:"namespace"`
	// Profile is netadmin (NET_ADMIN+NET_RAW), netadmin+bpf or privileged.
	// A node's CollectorNode.Profile may also be netadmin+netns: the --from
	// Pod's node with --client-netns.
	Profile      string   `json:"profile"`
	Capabilities []string `json:"capabilities,omitempty"`
	// HostPID is true when the collectors shared the node's PID namespace
	// (hostPID: true, no extra capability): it lets them read the endpoint
	// Pods' listening sockets through /proc/<pid>/net. Set from what the
	// collectors saw.
	HostPID bool            `json:"hostPID,omitempty"`
	Nodes   []CollectorNode `json:"nodes,omitempty"`
}

// CollectorNode is one node the trace wanted to inspect.
type CollectorNode struct {
	Node string `json:"node"`
	// Roles say why: endpoints, client, selected, all-nodes.
	Roles     []string `json:"roles,omitempty"`
	Inspected bool     `json:"inspected"`
	Failure   string   `json:"failure,omitempty"`
	// Cordoned: the node is marked unschedulable. The collector Pod names
	// its node, so the scheduler is not asked and it runs anyway.
	Cordoned bool `json:"cordoned,omitempty"`
	// Profile is set when this node's collector ran with another profile
	// than the run's (see CollectorRun.Profile).
	Profile string `json:"profile,omitempty"`
	// Transport is how the observation came back: "agent" (an exec into
	// the node agent's Pod) or "ephemeral-pod" (a collector Pod created and
	// deleted for this trace). Empty when the node was not inspected.
	Transport string `json:"transport,omitempty"`
	// TransportNote says why a node the agent serves used a collector Pod.
	TransportNote string `json:"transportNote,omitempty"`
	// LateMillis is how late the node's collector ran (its heartbeat's
	// longest delay, the observation's collector.lateMillis): where it
	// reaches half a probe's timeout, that node's timeouts are judged
	// undetermined. Absent when not measured or under a millisecond.
	LateMillis float64 `json:"lateMillis,omitempty"`
}
