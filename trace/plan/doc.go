// Package plan is the contract between the judge and the node side: which
// nodes to inspect and what to ask each one's collector (NodePlan, computed
// from the API input alone by PlanNodes), and what the node side returns
// (NodeReport, one NodeView per node). Package nodes implements
// NodeInspector against it without importing trace, so that data flows one
// way: trace plans, nodes observes, trace judges the report.
//
// Its files: plan.go holds the node selection, the plan and the report;
// request.go builds each node's collector request from one shared template;
// encode.go encodes it for the collector Pod, the parts every node shares
// encoded once per plan.
package plan
