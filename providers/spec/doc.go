// Package spec compiles provider specs, gateways described as YAML
// (docs/provider-specs.md), into providers: a spec says where a
// gateway's signature is, what it signs, with which algorithm and
// encoding, how old its timestamp may be, and where the event key, type
// and fingerprint are; Load checks all of it and runs the spec's own
// example deliveries, and Spec.New builds a Provider that verifies,
// parses and signs deliveries as a hand-written adapter does.
//
// The built-in specs are embedded from builtin/; WEBHOOKD_PROVIDER_SPECS
// adds an operator's own (cmd/webhookd). Everything a spec asks for is
// compiled once at load: a delivery costs no template parsing, no map
// lookups beyond its own headers, and no reflection.
//
// Like every adapter, a spec Provider never re-serialises a body before
// verifying it, never builds an event key from what the gateway does not
// sign (docs/contract.md, "Event keys"), and never puts a secret, a
// signature or a body in an error.
package spec
