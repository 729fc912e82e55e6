package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
)

// errNotLoopback is a WEBHOOKD_PPROF_ADDR that could be reached from another
// machine: profiles show request data in flight (stack arguments, heap
// contents by type) and /debug/pprof/profile costs CPU on demand, so the
// listener is for the operator on the host only.
var errNotLoopback = errors.New("must be a loopback host and port, such as 127.0.0.1:6060 or [::1]:6060")

// loopbackAddr checks that addr names a loopback IP address and a port.
// Names are refused, not resolved: "localhost" may resolve elsewhere.
func loopbackAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return errNotLoopback
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q %w", addr, errNotLoopback)
	}
	return nil
}

// pprofHandler serves Go's runtime profiles under /debug/pprof/. It is its
// own mux, not http.DefaultServeMux, so that nothing else registered there
// is exposed with it, and it never shares the providers' listener.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// startPprof listens on addr and serves pprofHandler until stop is called.
// It returns once the listener is open, so a listen error stops serve at
// start rather than being lost; stop closes the listener and every
// connection before it returns.
func startPprof(addr string, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("WEBHOOKD_PPROF_ADDR: %w", err)
	}
	srv := newServer(pprofHandler(), log, 0)
	go func() { _ = srv.Serve(ln) }()
	log.Warn("pprof listening: profiles of this process are served on this address", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}
