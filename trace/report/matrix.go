package report

// EndpointMatrix is the node × endpoint grid: for each Service port, what
// each inspected node's datapath programmed for each endpoint and whether the
// node reached that endpoint directly. It is judged here, like every other
// finding, so that a renderer only lays it out. Nil when no node was
// inspected.
type EndpointMatrix struct {
	Ports []MatrixPort `json:"ports"`
}

// MatrixPort is the grid of one Service port and IP family.
type MatrixPort struct {
	// Port is the ServicePortName and number, e.g. "default/web:http (80/TCP)".
	Port string `json:"port"`
	// Endpoints are the grid's columns, kube-proxy endpoint strings (ip:port),
	// sorted: every endpoint of the port's slices and every endpoint some
	// node programmed although the slices no longer hold it.
	Endpoints []string    `json:"endpoints"`
	Nodes     []MatrixRow `json:"nodes"`
	// Sparse is set when the port has more than 20,000 node × endpoint
	// cells: each row's Cells then hold only the cells that neither pass
	// nor are skipped (none for a node that could not be read), and its
	// counts say the rest.
	Sparse bool `json:"sparse,omitempty"`
}

// MatrixRow is one node's row; Cells follow MatrixPort.Endpoints.
type MatrixRow struct {
	Node   string `json:"node"`
	Status Status `json:"status"`
	// Datapath is the datapath that programmed the port on this node.
	Datapath string `json:"datapath,omitempty"`
	// Reason says why the row could not be judged (status unknown), or
	// why its missing or stale endpoints only warn (kube-proxy has not
	// applied the Service's latest change yet).
	Reason string `json:"reason,omitempty"`
	// Expected counts the endpoints the node should program, Programmed
	// those of them it does.
	Expected   int `json:"expected"`
	Programmed int `json:"programmed"`
	// Probes counts the node's direct probes of endpoints by outcome.
	Probes map[string]int `json:"probes,omitempty"`
	Cells  []MatrixCell   `json:"cells,omitempty"`
	// OddCells, in a sparse port, counts the row's cells that neither
	// pass nor are skipped when there are more than Cells keeps (the
	// first ones by endpoint): a node missing all 5,000 endpoints is one
	// count, not 5,000 cells saying "missing".
	OddCells int `json:"oddCells,omitempty"`
	// SameAs, in a sparse port, names an earlier node whose row has the
	// same cells: this row leaves them out and keeps its own status and
	// counts, so 1,000 nodes missing the same endpoints are one list.
	SameAs string `json:"sameAs,omitempty"`
}

// MatrixCell is one endpoint as one node sees it.
type MatrixCell struct {
	// Endpoint is the cell's column, an entry of MatrixPort.Endpoints.
	Endpoint string `json:"endpoint"`
	Status   Status `json:"status"`
	// Expected: kube-proxy on this node should send ClusterIP traffic to it.
	Expected bool `json:"expected"`
	// Programmed: the node's datapath sends ClusterIP traffic to it.
	Programmed bool `json:"programmed"`
	// Share is the programmed fraction of new connections, 0 to 1.
	Share float64 `json:"share"`
	// FairShare is 1/n of the n endpoints the node programmed, the share
	// kube-proxy gives each; 0 when the node neither programs nor should
	// program it.
	FairShare float64 `json:"fairShare"`
	// Probe is the node's direct connection to the endpoint: ok, refused,
	// timeout, unreachable, reset, other, no-reply (UDP), or empty when the
	// node did not probe it.
	Probe string `json:"probe,omitempty"`
	// Problem names what is wrong in a word or two: missing, stale,
	// unequal share, refused, …; empty when the cell passes.
	Problem string `json:"problem,omitempty"`
}
