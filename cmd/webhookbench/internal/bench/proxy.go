package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/http/pprof"
	"net/url"
	"time"
)

// runProxy is `webhookbench proxy`: a stock httputil.ReverseProxy in front
// of the downstream, the baseline every variant is compared with. Its
// transport keeps as many idle connections per host as webhookd's
// forwarder does (64), so that the baseline is not slowed by opening
// connections (net/http's default keeps 2).
func runProxy(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8090", "listen address")
	upstream := fs.String("upstream", "", "URL every request is proxied to (its path replaces the request's)")
	pprofAddr := fs.String("pprof", "", "serve Go's CPU profile and execution trace on this address (compare -cpuprofile, -trace), as webhookd's WEBHOOKD_PPROF_ADDR does")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	target, err := url.Parse(*upstream)
	if err != nil || target.Host == "" {
		fmt.Fprintf(stderr, "webhookbench proxy: -upstream %q is not an absolute URL\n", *upstream)
		return 2
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host, r.Out.URL.Path = target.Scheme, target.Host, target.Path
			r.Out.Host = target.Host
		},
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		},
	}
	stop, err := servePprof(*pprofAddr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer stop()
	return serveUntilDone(ctx, *listen, rp, stderr)
}

// servePprof serves Go's CPU profile and execution trace on addr, the
// same as webhookd's WEBHOOKD_PPROF_ADDR, so that a helper's profile
// breaks down as webhookd's does; an empty addr serves nothing. stop ends
// it.
func servePprof(addr string) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { srv.Close() }, nil
}

// serveUntilDone serves h on addr until ctx ends.
func serveUntilDone(ctx context.Context, addr string, h http.Handler, stderr io.Writer) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintln(stderr, err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return 0
}
