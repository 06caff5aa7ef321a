// Package charts holds the operator's Helm chart (charts/azure-private-endpoint-operator)
// and its tests: the chart lints and renders, exposes every operator flag,
// grants exactly the RBAC the controllers are generated with, passes the
// restricted Pod Security Standard, and an operator bound to its RBAC wires
// clusters end to end.
package charts
