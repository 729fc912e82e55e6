package postgres

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/dedupetest"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

func stripeEvent(b testing.TB) []byte {
	body, err := os.ReadFile("../../fixtures/stripe/payment_intent_succeeded.json")
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// BenchmarkPostgresStoredRequests compares one delivery's store work (a
// claim and a completion, 8 callers per CPU) without a request, with its
// headers only and with the whole request of a typical Stripe event, and
// reports the table's size per record, indexes and TOAST included:
//
//	WEBHOOKD_TEST_POSTGRES_DSN=... go test ./dedupe/postgres -run '^$' -bench StoredRequests -benchtime 5000x
func BenchmarkPostgresStoredRequests(b *testing.B) {
	dsn := pgtest.DSN(b)
	body := stripeEvent(b)
	for _, kind := range []struct {
		name string
		req  *dedupe.Request
	}{
		{"none", nil},
		{"headers", dedupe.NewRequest("application/json; charset=utf-8", "payment_intent.succeeded", body, false)},
		{"body", dedupe.NewRequest("application/json; charset=utf-8", "payment_intent.succeeded", body, true)},
	} {
		b.Run("request="+kind.name, func(b *testing.B) {
			s := openTestPG(b, dsn, testSchema(b, dsn), dedupe.Options{})
			start := time.Now()
			dedupetest.BenchClaimComplete(b, s, kind.req)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
			var size int64
			if err := s.pool.QueryRow(context.Background(), `SELECT pg_total_relation_size($1::regclass)`, s.table).Scan(&size); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(size)/float64(b.N), "bytes/record")
		})
	}
}

// BenchmarkPostgresRecent lists a page of 50 records, newest first, from a
// table of a million (WEBHOOKD_BENCH_RECORDS), inserted by one
// INSERT ... SELECT (count triggers off): 80% stripe, 20% xendit, 1% FAILED, each with a typical
// Stripe event's request:
//
//	WEBHOOKD_TEST_POSTGRES_DSN=... go test ./dedupe/postgres -run '^$' -bench PostgresRecent -benchtime 50x
func BenchmarkPostgresRecent(b *testing.B) {
	dsn := pgtest.DSN(b)
	s := openTestPG(b, dsn, testSchema(b, dsn), dedupe.Options{})
	total := 1_000_000
	if n, err := strconv.Atoi(os.Getenv("WEBHOOKD_BENCH_RECORDS")); err == nil && n > 0 {
		total = n
	}
	ctx := context.Background()
	body := stripeEvent(b)
	start := time.Now()
	// The count triggers are off for the load: a million row triggers of
	// one statement queue up and upsert one counts row a million times
	// (the listing does not read the counts).
	if _, err := s.pool.Exec(ctx, `ALTER TABLE `+s.table+` DISABLE TRIGGER USER`); err != nil {
		b.Fatal(err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO `+s.table+` (key, state, token, attempts, created_at, updated_at, expires_at, fingerprint,
			status, content_type, body, req_content_type, req_event_type, req_body, req_size)
		SELECT CASE WHEN i % 5 = 4 THEN 'xendit:invoice.paid:inv_' ELSE 'stripe:evt_' END || lpad(i::text, 7, '0'),
			CASE WHEN i % 100 = 7 THEN 3 ELSE 2 END, 0, 1, at, at, at + interval '168 hours', 'fp',
			CASE WHEN i % 100 = 7 THEN 422 ELSE 200 END, 'application/json', '{"received":true}'::bytea,
			'application/json; charset=utf-8', 'payment_intent.succeeded', $2::bytea, length($2::bytea)
		FROM generate_series(0, $1 - 1) i, LATERAL (SELECT timestamptz '2026-01-01' + i * interval '1 millisecond' AS at) t`,
		total, body)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ALTER TABLE `+s.table+` ENABLE TRIGGER USER`); err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE `+s.table); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "BenchmarkPostgresRecent: inserted %d records in %s\n", total, time.Since(start).Round(time.Second))
	mid := dedupe.Record{Key: fmt.Sprintf("stripe:evt_%07d", total/2),
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(total/2) * time.Millisecond)}
	cases := []struct {
		name string
		o    dedupe.RecentOptions
	}{
		{"first", dedupe.RecentOptions{Limit: 50}},
		{"deep", dedupe.RecentOptions{Limit: 50, Cursor: dedupe.EncodeCursor(&mid)}},
		{"provider=xendit", dedupe.RecentOptions{Limit: 50, Provider: "xendit"}},
		{"state=FAILED", dedupe.RecentOptions{Limit: 50, State: dedupe.Failed}},
		{"state=IN_FLIGHT", dedupe.RecentOptions{Limit: 50, State: dedupe.InFlight}},
	}
	b.ResetTimer()
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				recs, _, err := s.Recent(ctx, tc.o)
				if err != nil {
					b.Fatal(err)
				}
				if tc.o.State != dedupe.InFlight && len(recs) != 50 {
					b.Fatalf("%d records", len(recs))
				}
			}
		})
	}
}
