// Package wiringdns is the wiring's DNS mode (--wiring-dns): a controller
// of workload clusters of its own that writes, through the process's
// Private DNS engine, the records the wiring's IP annotations feed — in
// the management cluster's network, each workload cluster's API names; in
// each workload cluster's network, the management cluster's ingress names
// (docs/design.md, *DNS for the wiring*). It reads what the wiring serves
// a cluster through clusterlink.Wiring and records what its records hold
// on the cluster through clusterlink.DNSPass, which the wiring reads back
// before it lets an endpoint go; the wiring never imports this package.
package wiringdns
