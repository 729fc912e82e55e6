package tiered

import (
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/dedupetest"
	"github.com/webhookd/webhookd/dedupe/postgres"
	"github.com/webhookd/webhookd/dedupe/postgres/pgtest"
)

// Stats (Postgres's trigger-kept counts) equals counting the shared table
// after every kind of transition made through the tiered store, as
// dedupe/postgres's TestPostgresStatsMatchesCount checks for Postgres alone.
func TestTieredStatsMatchesCount(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	clock := dedupetest.NewClock()
	opts := dedupe.Options{Lease: time.Minute, Retention: time.Hour, AbandonAfter: time.Hour, Now: clock.Now}
	s := New(openTestLMDB(t, opts), openTestPG(t, dsn, schema, opts))
	pgtest.StatsMatchCount(t, s, clock, pgtest.AdminConn(t, dsn, schema), postgres.Table)
}
