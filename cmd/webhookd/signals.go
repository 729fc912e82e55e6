package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// notifyContext returns a context that the first SIGINT or SIGTERM cancels,
// which starts the graceful shutdown. A second signal ends the process at
// once with status 128+signal number (130 for SIGINT, 143 for SIGTERM), as
// a shell reports a process its signal killed: a shutdown can always be cut
// short. Forwards then in flight keep their keys IN_FLIGHT until their
// leases pass (WEBHOOKD_LEASE); every answered delivery is already durable.
func notifyContext(stderr io.Writer, exit func(int)) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "webhookd: second signal (%s): exiting at once\n", sig)
			code := 1
			if s, ok := sig.(syscall.Signal); ok {
				code = 128 + int(s)
			}
			exit(code)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
