package deliver

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/webhookd/webhookd/dedupe"
	"github.com/webhookd/webhookd/dedupe/lmdb"
	"github.com/webhookd/webhookd/dispatch"
)

// startsCore records when each attempt started and answers 200 at once.
type startsCore struct {
	mu         sync.Mutex
	starts     []time.Time
	open, most int
	done       chan struct{}
	want       int
	once       sync.Once
}

func (c *startsCore) Forward(ctx context.Context, req dispatch.Request) dispatch.Result {
	c.mu.Lock()
	c.starts = append(c.starts, time.Now())
	c.open++
	c.most = max(c.most, c.open)
	n := len(c.starts)
	c.mu.Unlock()
	time.Sleep(2 * time.Millisecond) // the core's own time to answer
	c.mu.Lock()
	c.open--
	c.mu.Unlock()
	if n == c.want {
		c.once.Do(func() { close(c.done) })
	}
	return dispatch.Result{Outcome: dispatch.Delivered, Status: 200}
}

// BenchmarkRate200 queues 1,000 events for a destination with rate 200 and
// concurrency 16, on the system clock, and reports the most attempts that
// started in any one-second window, the time from the first start to the
// last, and the most open at once (the target: at most 200 in any second, ±10 %):
//
//	go test ./deliver -run '^$' -bench Rate200 -benchtime 1x
func BenchmarkRate200(b *testing.B) {
	const events = 1000
	s, err := lmdb.Open(b.TempDir(), lmdb.Options{Options: dedupe.Options{PruneInterval: -1}, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range events {
		if _, err := s.Enqueue(ctx, dedupe.Enqueue{Key: fmt.Sprintf("stripe:evt_%d\x1fledger", i), Fingerprint: "fp", MaxAge: time.Hour,
			Request: dedupe.NewRequest("application/json", "", []byte("{}"), true)}); err != nil {
			b.Fatal(err)
		}
	}
	core := &startsCore{done: make(chan struct{}), want: events}
	loop, err := New(Options{Store: s}, []Destination{{Name: "ledger", Forwarder: core, Rate: 200, Concurrency: 16}})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() { defer close(finished); loop.Run(runCtx) }()
	<-core.done
	cancel()
	<-finished
	starts := core.starts
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	most := 0
	for i := range starts {
		j := i
		for j < len(starts) && starts[j].Sub(starts[i]) < time.Second {
			j++
		}
		most = max(most, j-i)
	}
	b.ReportMetric(float64(most), "max-starts-in-1s")
	// 1,000 at 200 a second is five windows: the last starts 4 s after the first.
	b.ReportMetric(starts[len(starts)-1].Sub(starts[0]).Seconds(), "first-to-last-s")
	b.ReportMetric(float64(core.most), "max-open")
}
