// Command webhookbench load-tests webhookd side by side with a bare reverse
// proxy and a Redis-dedupe receiver, and checks exactly-once delivery under
// crashes and downstream faults. See BENCHMARKS.md and package
// internal/bench.
//
// It is a module of its own, so that its Redis client is not a dependency
// of the receiver's module; run it from this folder (go run .), which
// builds the checkout's webhookd.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/webhookd/webhookd/cmd/webhookbench/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := bench.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
