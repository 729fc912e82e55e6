package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

const healthcheckUsage = "webhookd healthcheck [--url URL] [--timeout D]"

// runHealthcheck GETs the running server's /healthz and exits 0 on 200 and 1
// otherwise. It is the Docker HEALTHCHECK, for images that have no curl.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("webhookd healthcheck", healthcheckUsage, stderr)
	target := fs.String("url", "", "URL to GET (default http://127.0.0.1:<port of WEBHOOKD_ADDR>/healthz)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if code, ok := parseFlagsOnly(fs, args, stderr, ""); !ok {
		return code
	}
	if *target == "" {
		cfg, err := loadConfig()
		if cfg == nil {
			fmt.Fprintf(stderr, "webhookd healthcheck: configuration: %v\n", err)
			return 2
		}
		if *target, err = healthURL(cfg.Addr); err != nil {
			fmt.Fprintf(stderr, "webhookd healthcheck: WEBHOOKD_ADDR: %v\n", err)
			return 2
		}
	}
	if err := checkHealth(ctx, *target, *timeout); err != nil {
		fmt.Fprintf(stderr, "webhookd healthcheck: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}

// healthURL turns a listen address into the URL of its /healthz. A wildcard
// host (":8080", "0.0.0.0:8080", "[::]:8080") is reached on 127.0.0.1.
func healthURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port == "" {
		return "", errors.New("no port")
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}

func checkHealth(ctx context.Context, target string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	// No proxy: the probe is for this host, whatever HTTP_PROXY says.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", target, resp.StatusCode)
	}
	return nil
}
