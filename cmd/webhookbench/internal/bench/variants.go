package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The designs webhookbench compares.
const (
	variantLMDB     = "lmdb"
	variantProxy    = "proxy"
	variantPostgres = "postgres"
	variantRedis    = "redis"
	variantTiered   = "tiered"
	// variantPostgres2 is two webhookd nodes on one Postgres schema, the
	// load handed to each in turn.
	variantPostgres2 = "postgres2"
	// variantQueue is webhookd on LMDB with the one destination in
	// delivery: queue (store and forward, docs/delivery.md): the gateway
	// is answered once the event is stored, before the core has it.
	variantQueue = "queue"
	// variantFloor is the least a receiver with webhookd's guarantee
	// does (floorReceiver): no signature, parse, log or metrics.
	variantFloor = "floor"
)

// variantLabels name the designs in reports.
var variantLabels = map[string]string{
	variantLMDB:      "webhookd, LMDB store (default)",
	variantProxy:     "bare httputil.ReverseProxy",
	variantPostgres:  "webhookd, Postgres store",
	variantRedis:     "Redis SET NX PX + dispatch.Forwarder",
	variantTiered:    "webhookd, tiered store (LMDB + Postgres)",
	variantPostgres2: "webhookd, Postgres store, two nodes",
	variantQueue:     "webhookd, LMDB store, delivery: queue",
	variantFloor:     "floor: LMDB claim, forward, answer, nothing else",
}

// beforeSuffix names a webhookd design run with the -before binary:
// lmdb-before, postgres-before, tiered-before.
const beforeSuffix = "-before"

// label names variant in reports.
func label(variant string) string {
	if base, ok := strings.CutSuffix(variant, beforeSuffix); ok {
		return variantLabels[base] + ", before"
	}
	return variantLabels[variant]
}

// dedupes reports whether a design dedupes and sets Idempotency-Key.
func dedupes(variant string) bool { return variant != variantProxy }

// servesMetrics reports whether a design is webhookd, with its /metrics.
func servesMetrics(variant string) bool {
	return dedupes(variant) && variant != variantFloor && variant != variantRedis
}

// targetOpts configure one start of a design.
type targetOpts struct {
	downstream string
	// lease and dispatchTimeout override the design's defaults when set.
	lease, dispatchTimeout time.Duration
	pgDSN                  string
	redisAddr              string
	// dir is this start's own directory (data dir, log).
	dir string
	// pprofAddr, when set, is given to webhookd as WEBHOOKD_PPROF_ADDR.
	pprofAddr string
	// queueConcurrency is the queue design's destination concurrency
	// (0: webhookd's default).
	queueConcurrency int
}

// startVariant starts one design in front of o.downstream. The returned
// cleanup stops it and removes what it left in Postgres or Redis.
func (e *env) startVariant(ctx context.Context, variant string, o targetOpts) (*proc, func(), error) {
	if base, ok := strings.CutSuffix(variant, beforeSuffix); ok && base != variantProxy && base != variantRedis && base != variantFloor {
		if e.before == "" {
			return nil, nil, fmt.Errorf("%w: %s needs -before", errSkipped, variant)
		}
		before := *e
		before.webhookd = e.before
		return before.startVariant(ctx, base, o)
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return nil, nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, nil, err
	}
	logPath := filepath.Join(o.dir, variant+".log")
	var extra []string
	if o.lease > 0 {
		extra = append(extra, "WEBHOOKD_LEASE="+o.lease.String())
	}
	if o.dispatchTimeout > 0 {
		extra = append(extra, "WEBHOOKD_DISPATCH_TIMEOUT="+o.dispatchTimeout.String())
	}
	if o.pprofAddr != "" {
		extra = append(extra, "WEBHOOKD_PPROF_ADDR="+o.pprofAddr)
	}
	if o.lease > 0 && o.dispatchTimeout > 0 {
		extra = append(extra, "WEBHOOKD_STORE_TIMEOUT="+storeTimeout(o.lease, o.dispatchTimeout).String())
	}
	switch variant {
	case variantLMDB:
		p, err := e.startWebhookd(addr, filepath.Join(o.dir, "data"), o.downstream, logPath, extra...)
		if err != nil {
			return nil, nil, err
		}
		return p, p.stop, nil
	case variantPostgres, variantTiered, variantPostgres2:
		if o.pgDSN == "" {
			return nil, nil, errNoPostgres
		}
		dsn, drop, err := pgSchema(ctx, o.pgDSN)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: Postgres: %v", errSkipped, err)
		}
		// The name finds webhookd's backends in pg_stat_activity, for
		// their CPU time; other clients of the server have other names.
		app := "webhookbench_" + newRunID()
		store := variant
		if variant == variantPostgres2 {
			store = variantPostgres
		}
		extra = append(extra, "WEBHOOKD_STORE="+store, "WEBHOOKD_POSTGRES_DSN="+withParam(dsn, "application_name", app))
		p, err := e.startWebhookd(addr, filepath.Join(o.dir, "data"), o.downstream, logPath, extra...)
		if err != nil {
			drop()
			return nil, nil, err
		}
		if variant == variantPostgres2 {
			addr2, err := freeAddr()
			if err != nil {
				p.stop()
				drop()
				return nil, nil, err
			}
			q, err := e.startWebhookd(addr2, filepath.Join(o.dir, "data2"), o.downstream, filepath.Join(o.dir, variant+"-2.log"), extra...)
			if err != nil {
				p.stop()
				drop()
				return nil, nil, err
			}
			p.peers = []*proc{q}
			p.cpu = append(p.cpu, q.cpu...)
		}
		// Both nodes' backends carry app: one source counts them all.
		p.cpu = append(p.cpu, pgBackendSource(o.pgDSN, app))
		return p, func() {
			for _, q := range p.peers {
				q.stop()
			}
			p.stop()
			drop()
		}, nil
	case variantQueue:
		file := filepath.Join(o.dir, "queue.yaml")
		if err := os.WriteFile(file, []byte(queueConfig(o.downstream, o.queueConcurrency)), 0o600); err != nil {
			return nil, nil, err
		}
		p, err := e.startWebhookd(addr, filepath.Join(o.dir, "data"), o.downstream, logPath, append(extra, "WEBHOOKD_CONFIG="+file)...)
		if err != nil {
			return nil, nil, err
		}
		return p, p.stop, nil
	case variantProxy:
		return e.startHelper([]string{"proxy", "-listen", addr, "-upstream", o.downstream}, o, addr, logPath)
	case variantFloor:
		args := []string{"floor-receiver", "-listen", addr, "-downstream", o.downstream, "-data", filepath.Join(o.dir, "data")}
		if o.lease > 0 {
			args = append(args, "-lease", o.lease.String())
		}
		if o.dispatchTimeout > 0 {
			args = append(args, "-dispatch-timeout", o.dispatchTimeout.String())
		}
		return e.startHelper(args, o, addr, logPath)
	case variantRedis:
		if o.redisAddr == "" {
			return nil, nil, fmt.Errorf("%w: no Redis address (-redis)", errSkipped)
		}
		rdb := redis.NewClient(&redis.Options{Addr: o.redisAddr})
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := rdb.Ping(pctx).Err()
		cancel()
		if err != nil {
			rdb.Close()
			return nil, nil, fmt.Errorf("%w: Redis at %s: %v", errSkipped, o.redisAddr, err)
		}
		prefix := "webhookbench:" + newRunID() + ":"
		args := []string{"redis-receiver", "-listen", addr, "-downstream", o.downstream, "-redis", o.redisAddr, "-prefix", prefix}
		if o.lease > 0 {
			args = append(args, "-lease", o.lease.String())
		}
		if o.dispatchTimeout > 0 {
			args = append(args, "-dispatch-timeout", o.dispatchTimeout.String())
		}
		p, err := startProc(e.self(args...), addr, logPath)
		if err != nil {
			rdb.Close()
			return nil, nil, err
		}
		p.cpu = append(p.cpu, redisServerSource(rdb))
		return p, func() {
			p.stop()
			dropRedisPrefix(rdb, prefix)
			rdb.Close()
		}, nil
	}
	return nil, nil, fmt.Errorf("unknown variant %q (want lmdb, proxy, postgres, postgres2, tiered, queue, floor or redis)", variant)
}

// startHelper starts one of this program's helper servers (args: its
// subcommand and flags) on addr, profiled on o.pprofAddr when set.
func (e *env) startHelper(args []string, o targetOpts, addr, logPath string) (*proc, func(), error) {
	if o.pprofAddr != "" {
		args = append(args, "-pprof", o.pprofAddr)
	}
	p, err := startProc(e.self(args...), addr, logPath)
	if err != nil {
		return nil, nil, err
	}
	return p, p.stop, nil
}

// queueConfig is the WEBHOOKD_CONFIG of variantQueue and of crash mode's
// queue: the benchmark's Stripe source, its every event to one queue
// destination at downstream, with concurrency attempts open at once at
// most (0: webhookd's default).
func queueConfig(downstream string, concurrency int) string {
	conc := ""
	if concurrency > 0 {
		conc = fmt.Sprintf(", concurrency: %d", concurrency)
	}
	return fmt.Sprintf(`sources:
  - {name: stripe, provider: stripe, settings: {secrets: "${WEBHOOKD_STRIPE_SECRETS}"}}
destinations:
  - {name: core, url: %q, delivery: queue%s}
routes:
  - {source: stripe, to: [core]}
`, downstream, conc)
}

// dropRedisPrefix deletes one run's keys.
func dropRedisPrefix(rdb *redis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 1000 {
			rdb.Del(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		rdb.Del(ctx, keys...)
	}
}
