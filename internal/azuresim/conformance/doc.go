// Package conformance replays Azure's own recorded traffic against azuresim
// and reports every difference: methods, paths and request bodies as Azure
// received them, and the status codes, headers and response bodies Azure
// answered with.
//
// The fixtures under testdata/ are facts taken from public recordings of
// live ARM traffic (Azure Service Operator v2's go-vcr recordings, named
// with their repository path and commit in each fixture), rewritten in this
// package's own format: one step per request the operator's kind of client
// makes, the long-running operations followed the way azcore follows them.
// Values that differ on every run compare by format only: GUIDs, IPv4
// addresses, RFC 3339 times, and the host and operation token of a status
// URL.
//
// A difference fails TestConformance unless allowlist.txt lists it with a
// one-line reason. `make fidelity` prints every difference, allowed or not.
package conformance
