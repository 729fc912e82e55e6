package postgres

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// BenchmarkWriterBatch measures one delivery's store work (a claim keeping
// a typical Stripe event's request, then a completion) from 64 callers,
// through the writer's batches, and reports what it costs Postgres: CPU of
// the store's backends and WAL bytes per delivery, and ops per batch.
// Variants change one thing each against "multi" (as shipped):
//
//   - each: every op its own statement in the batch's pipeline;
//   - writers=N: N batches in flight instead of DefaultWriters;
//   - schema=...: the table with one of its indexes dropped, or with the
//     count triggers of an older schema (one counts write per row).
//
// WAL is read from pg_current_wal_lsn, which counts every client of the
// server: run it on a quiet server, and compare the variants of one run.
//
//	WEBHOOKD_TEST_POSTGRES_DSN=... go test ./dedupe/postgres -run '^$' -bench WriterBatch -benchtime 20000x -count 3
func BenchmarkWriterBatch(b *testing.B) {
	dsn := pgtest.DSN(b)
	body := stripeEvent(b)
	req := dedupe.NewRequest("application/json; charset=utf-8", "payment_intent.succeeded", body, true)
	for _, v := range []struct {
		name   string
		opts   func(*Options)
		schema func(schema string) []string // statements run on the new schema before the load
	}{
		{name: "multi"},
		{name: "each", opts: func(o *Options) { o.pipelineEach = true }},
		{name: "no-gather", opts: func(o *Options) { o.noGather = true }},
		{name: "writers=1", opts: func(o *Options) { o.Writers = 1 }},
		{name: "writers=4", opts: func(o *Options) { o.Writers = 4 }},
		{name: "schema=no-expires-index", schema: dropIndex(Table + "_expires_at")},
		{name: "schema=no-created-index", schema: dropIndex(recentIndex)},
		{name: "schema=no-failed-index", schema: dropIndex(failedIndex)},
		{name: "schema=row-count-triggers", schema: rowCountTriggers},
		{name: "schema=body-lz4", schema: alterTable(`ALTER COLUMN req_body SET COMPRESSION lz4`)},
		{name: "schema=body-inline", schema: alterTable(`SET (toast_tuple_target = 8160)`)},
		{name: "schema=body-external", schema: alterTable(`ALTER COLUMN req_body SET STORAGE EXTERNAL`)},
	} {
		if f := os.Getenv("BENCH_VARIANT"); f != "" && !strings.Contains(v.name, f) {
			continue
		}
		b.Run(v.name, func(b *testing.B) {
			schema := pgtest.Schema(b, dsn)
			app := "webhookd_bench_" + strconv.FormatInt(time.Now().UnixNano(), 36)
			opts := Options{Options: dedupe.Options{PruneInterval: -1}, Schema: schema}
			if v.opts != nil {
				v.opts(&opts)
			}
			var batches, ops, took atomic.Int64
			opts.OnCommit = func(n int, d time.Duration) { batches.Add(1); ops.Add(int64(n)); took.Add(int64(d)) }
			s, err := Open(context.Background(), dsn+"&application_name="+app+os.Getenv("BENCH_DSN_EXTRA"), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			admin := pgtest.AdminConn(b, dsn, schema)
			var ddl []string
			if v.schema != nil {
				ddl = v.schema(schema)
			}
			for _, q := range ddl {
				if _, err := admin.Exec(ctx, q); err != nil {
					b.Fatal(q, err)
				}
			}
			_, sys0 := backendUserSys(b, admin, app)
			cpu0, wal0 := backendCPU(b, admin, app), walLSN(b, admin)
			var n atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := fmt.Sprintf("stripe:evt_%d_%d", time.Now().UnixNano(), n.Add(1))
					l, _, err := s.Claim(ctx, key, "fp", req)
					if err != nil {
						b.Error(err)
						return
					}
					if err := s.Complete(ctx, l, dedupe.Response{Status: 200, Body: []byte(`{"ok":true}`)}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			cpu, wal := backendCPU(b, admin, app)-cpu0, walLSN(b, admin)-wal0
			_, sys := backendUserSys(b, admin, app)
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "pg-cpu-µs/op")
			b.ReportMetric(float64((sys-sys0).Microseconds())/float64(b.N), "pg-sys-µs/op")
			b.ReportMetric(float64(wal)/float64(b.N), "wal-B/op")
			if batches.Load() > 0 {
				b.ReportMetric(float64(ops.Load())/float64(batches.Load()), "ops/batch")
				b.ReportMetric(float64(took.Load())/float64(batches.Load())/1e6, "ms/batch")
			}
		})
	}
}

// backendCPU is the CPU time, user and system, of the server processes
// serving application app (the benchmark's pool), read from /proc: the
// server must run on this machine.
func backendCPU(b *testing.B, admin *pgx.Conn, app string) time.Duration {
	u, s := backendUserSys(b, admin, app)
	return u + s
}

// backendUserSys is backendCPU split into user and system time.
func backendUserSys(b *testing.B, admin *pgx.Conn, app string) (user, sys time.Duration) {
	rows, err := admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	var uticks, sticks int64
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // ended
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		uticks += u
		sticks += s
	}
	return time.Duration(uticks) * 10 * time.Millisecond, time.Duration(sticks) * 10 * time.Millisecond // USER_HZ = 100
}

// walLSN is the server's WAL insert position, in bytes.
func walLSN(b *testing.B, admin *pgx.Conn) int64 {
	var n int64
	if err := admin.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// dropIndex is the DDL dropping index.
func dropIndex(index string) func(string) []string {
	return func(string) []string { return []string{`DROP INDEX ` + index} }
}

// alterTable is the DDL altering the records table by change.
func alterTable(change string) func(string) []string {
	return func(string) []string { return []string{`ALTER TABLE ` + Table + ` ` + change} }
}

// rowCountTriggers replaces the count triggers with those of an older
// schema: a row trigger writing the counts table on every insert and
// change of state.
func rowCountTriggers(schema string) []string {
	return []string{
		`CREATE FUNCTION bench_row_count() RETURNS trigger LANGUAGE plpgsql
		SET search_path = ` + pgx.Identifier{schema}.Sanitize() + ` AS $f$
		DECLARE v_slot smallint := pg_backend_pid() % 16;
		BEGIN
			IF TG_OP = 'INSERT' THEN
				INSERT INTO ` + CountsTable + ` AS c (state, slot, n) VALUES (NEW.state, v_slot, 1)
					ON CONFLICT (state, slot) DO UPDATE SET n = c.n + 1;
			ELSE
				INSERT INTO ` + CountsTable + ` AS c (state, slot, n)
					SELECT v.state, v_slot, v.n FROM (VALUES (OLD.state, -1), (NEW.state, 1)) v (state, n) ORDER BY v.state
					ON CONFLICT (state, slot) DO UPDATE SET n = c.n + excluded.n;
			END IF;
			RETURN NULL;
		END $f$`,
		`DROP TRIGGER ` + countTriggers[0] + ` ON ` + Table,
		`DROP TRIGGER ` + countTriggers[1] + ` ON ` + Table,
		`CREATE TRIGGER ` + countTriggers[0] + ` AFTER INSERT ON ` + Table + ` FOR EACH ROW EXECUTE FUNCTION bench_row_count()`,
		`CREATE TRIGGER ` + countTriggers[1] + ` AFTER UPDATE OF state ON ` + Table + `
			FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION bench_row_count()`,
	}
}
