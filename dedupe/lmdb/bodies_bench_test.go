package lmdb

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// BenchmarkStoredBodyWrites measures what the stored request body costs
// the writer, with the webhookbench load's body (a Stripe event of about
// 2.2 KB, kept whole as WEBHOOKD_STORE_REQUESTS keeps it): path=sync is a
// Claim then a Complete per event over 64 callers, path=queue an Enqueue
// per event over 64 callers, then delivery passes that Take 64 events and
// Settle them COMPLETED in one write. It reports, beside events/s and
// writes/commit, the bytes the process wrote per event (B/event, the
// wchar of /proc/self/io: whole pages, free list and meta page included;
// two writes per event on the sync path, an enqueue and a share of a take
// and a settle on the queue's), the bytes it dirtied in the page cache per
// event (dirtied_B/event, write_bytes: what the syncs write back, in the
// page cache's folios) and the mean time of a commit, its syncs included
// (Options.OnCommit):
//
//	go test ./dedupe/lmdb -run '^$' -bench StoredBodyWrites -benchtime 20000x -count 3
//
// It uses only what every version of the store has, so that a test binary
// built from another checkout with this file copied in (d7692aa, which
// kept request bodies in a DBI of their own: BENCHMARKS.md, "Records
// without their request body") measures that checkout's layout under the
// same load.
func BenchmarkStoredBodyWrites(b *testing.B) {
	body := stripeEvent(b)
	b.Run("path=sync", func(b *testing.B) { benchSyncBody(b, body) })
	b.Run("path=queue", func(b *testing.B) { benchQueueBody(b, body) })
}

// commitMeter sums the writer's commits for OnCommit.
type commitMeter struct {
	n, writes atomic.Int64
	took      atomic.Int64 // nanoseconds
}

func (m *commitMeter) reset() {
	m.n.Store(0)
	m.writes.Store(0)
	m.took.Store(0)
}

func (m *commitMeter) onCommit(batch int, d time.Duration) {
	m.n.Add(1)
	m.writes.Add(int64(batch))
	m.took.Add(int64(d))
}

func openBodyBench(b *testing.B, m *commitMeter) *Store {
	dir := b.TempDir()
	warnIfTmpfs(b, dir)
	s, err := Open(dir, Options{Options: dedupe.Options{PruneInterval: -1, Lease: time.Minute}, OnCommit: m.onCommit})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// report writes the metrics of the writes m counted since the /proc/self/io
// figures wchar0 and wb0.
func (m *commitMeter) report(b *testing.B, wchar0, wb0 int64) {
	writes, commits := m.writes.Load(), m.n.Load()
	if writes == 0 || commits == 0 {
		b.Fatal("no commits")
	}
	wchar, wb := procIO()
	perEvent := float64(wchar-wchar0) / float64(b.N)
	b.ReportMetric(perEvent, "B/event")
	b.ReportMetric(perEvent/4096, "pages/event")
	b.ReportMetric(float64(wb-wb0)/float64(b.N), "dirtied_B/event")
	b.ReportMetric(float64(m.took.Load())/float64(commits)/1e3, "commit_us")
	b.ReportMetric(float64(writes)/float64(commits), "writes/commit")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// procIO reads /proc/self/io: wchar, the bytes passed to write calls
// (the pages LMDB writes), and write_bytes, the bytes the kernel accounts
// to storage (the page cache's dirtied folios: one 4 KiB page written into
// a large folio counts the whole folio), 0 where there is none.
func procIO() (wchar, writeBytes int64) {
	return procIOField("wchar"), procIOField("write_bytes")
}

func procIOField(field string) int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			return n
		}
	}
	return 0
}

// eventKey is the i-th event's store key: as a gateway's event ids are,
// in no order, so that the events of one commit land on leaves of their
// own in the records tree, as they do in production (sequential keys
// would share one).
func eventKey(i int) string {
	return fmt.Sprintf("stripe:evt_%016x", uint64(i)*0x9e3779b97f4a7c15)
}

// eachCaller runs fn(i) for i in [0, n) over callers goroutines and
// returns the first error.
func eachCaller(n, callers int, fn func(i int) error) error {
	var (
		next int64 = -1
		wg   sync.WaitGroup
		fail atomic.Value
	)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := atomic.AddInt64(&next, 1)
				if i >= int64(n) {
					return
				}
				if err := fn(int(i)); err != nil {
					fail.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := fail.Load().(error); ok {
		return err
	}
	return nil
}

func benchSyncBody(b *testing.B, body []byte) {
	var m commitMeter
	s := openBodyBench(b, &m)
	ctx := context.Background()
	resp := dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"received":true}`)}
	m.reset() // Open's own commit is not the load's
	wchar0, wb0 := procIO()
	b.ResetTimer()
	err := eachCaller(b.N, 64, func(i int) error {
		req := &dedupe.Request{ContentType: "application/json", EventType: "payment_intent.succeeded", Body: body, Size: len(body)}
		l, rec, err := s.Claim(ctx, eventKey(i), "fp", req)
		if err == nil && rec != nil {
			err = fmt.Errorf("new key found as %v", rec.State)
		}
		if err != nil {
			return err
		}
		return s.Complete(ctx, l, resp)
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	m.report(b, wchar0, wb0)
}

func benchQueueBody(b *testing.B, body []byte) {
	var m commitMeter
	s := openBodyBench(b, &m)
	ctx := context.Background()
	m.reset() // Open's own commit is not the load's
	wchar0, wb0 := procIO()
	b.ResetTimer()
	err := eachCaller(b.N, 64, func(i int) error {
		req := &dedupe.Request{ContentType: "application/json", EventType: "payment_intent.succeeded", Body: body, Size: len(body)}
		_, err := s.Enqueue(ctx, dedupe.Enqueue{Key: eventKey(i) + "\x1fledger", Fingerprint: "fp", Request: req, MaxAge: time.Hour})
		return err
	})
	for done := 0; err == nil && done < b.N; {
		var got []dedupe.Attempt
		if got, err = s.Take(ctx, "ledger", 64); err != nil {
			break
		}
		if len(got) == 0 {
			err = fmt.Errorf("%d of %d delivered, none due", done, b.N)
			break
		}
		st := make([]dedupe.Settlement, len(got))
		for i, a := range got {
			if len(a.Record.Request.Body) != len(body) {
				err = fmt.Errorf("%s taken without its body", a.Record.Key)
				break
			}
			st[i] = dedupe.Settlement{Lease: a.Lease, Outcome: dedupe.SettleComplete, Response: dedupe.Response{Status: 200}}
		}
		if err != nil {
			break
		}
		var errs []error
		if errs, err = s.Settle(ctx, st); err == nil {
			for _, e := range errs {
				if e != nil {
					err = e
				}
			}
		}
		done += len(got)
	}
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	m.report(b, wchar0, wb0)
}
