// Package bench is webhookbench: a load tool that measures webhookd against
// the designs it replaces, with the same signed traffic and the same
// downstream stub, and checks what each design forwards.
//
// It signs Stripe deliveries with the repository's own signing code
// (the built-in stripe spec, providers/spec), sends U unique events D times each from C concurrent
// clients, and counts in its own in-process downstream stub how often each
// event was forwarded and with which Idempotency-Key. Every system under
// test runs as a subprocess: webhookd from a binary it builds or is given,
// and the bare reverse proxy, the Redis-dedupe receiver and the floor (the
// least a receiver with webhookd's guarantee does) as subcommands of this
// same program, so that each pays for its own process.
//
// Subcommands (see Main): compare (the side-by-side run), crash (kill -9
// under load, then check nothing was lost), faults (a failing downstream,
// then check nothing was acknowledged early or accepted twice), and the
// helper servers proxy, redis-receiver and floor-receiver.
//
// It must only ever send to loopback addresses: every server it talks to
// is one it started.
package bench
