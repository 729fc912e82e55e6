package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/webhookd/webhookd/sink"
)

const sinkUsage = "webhookd sink [--addr ADDR] [--status CODE]"

// runSink is `webhookd sink`: a stand-in for the core service that prints
// each forwarded event and answers --status, until SIGINT/SIGTERM.
func runSink(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runSinkArgs(ctx, args, stdout, stderr, nil)
}

// runSinkArgs is runSink; ready, if not nil, receives the listening address
// (tests use it).
func runSinkArgs(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) int {
	fs := newFlagSet("webhookd sink", sinkUsage, stderr)
	addr := fs.String("addr", ":9000", "listen address")
	status := fs.Int("status", http.StatusOK, "status every request is answered with (503 rehearses a failing core service)")
	if code, ok := parseFlagsOnly(fs, args, stderr, ""); !ok {
		return code
	}
	h, err := sink.New(stdout, *status, nil)
	if err != nil {
		fmt.Fprintf(stderr, "webhookd sink: --status: %v\n", err)
		return 2
	}
	if err := runSinkServer(ctx, *addr, h, stderr, ready); err != nil {
		fmt.Fprintf(stderr, "webhookd sink: %v\n", err)
		return 1
	}
	return 0
}

// runSinkServer serves h on addr until ctx is done. ready, if not nil,
// receives the listening address (tests use it).
func runSinkServer(ctx context.Context, addr string, h http.Handler, stderr io.Writer, ready chan<- string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "webhookd sink: listening on %s; point serve at it with WEBHOOKD_DOWNSTREAM_URL=%s\n", ln.Addr(), localURL(ln.Addr()))
	if ready != nil {
		ready <- ln.Addr().String()
	}
	srv := newServer(h, nil, 30*time.Second)
	if err := serveUntilDone(ctx, srv, ln); err != nil {
		return err
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	fmt.Fprintln(stderr, "webhookd sink: stopped")
	return nil
}

// localURL is the URL a process on this machine reaches addr at.
func localURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
