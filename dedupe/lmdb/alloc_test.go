package lmdb

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/dedupe"
)

// TestAllocationsPerClaimComplete bounds what a new event's two writes (the
// claim, then the record of the answer) allocate, the writer's commits
// included: the key's copies, the record decoded by the claim's read, the
// nested transactions lmdb-go allocates, the contexts. The counts entry is
// encoded into the writer's scratch buffer, and each write's op and answer
// channel are reused (Store.opPool): 42 allocations before, 33 after.
func TestAllocationsPerClaimComplete(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates, and makes sync.Pool drop entries")
	}
	s := openTest(t, t.TempDir(), newClock(), func(o *Options) { o.NoSync = true })
	const runs = 200
	keys := make([]string, runs+1) // AllocsPerRun runs once more to warm up
	for i := range keys {
		keys[i] = fmt.Sprintf("stripe:evt_%d", i)
	}
	resp := dedupe.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"ok":true}`)}
	i := 0
	allocs := testing.AllocsPerRun(runs, func() {
		lease, rec, err := s.Claim(ctx, keys[i], "fp", nil)
		if err != nil || rec != nil {
			t.Fatal(err, rec)
		}
		if err := s.Complete(ctx, lease, resp); err != nil {
			t.Fatal(err)
		}
		i++
	})
	t.Logf("%v allocations per claim and complete", allocs)
	// 34: Complete's op runs under context.WithoutCancel (settle), one
	// allocation that lets it land after its caller stops waiting.
	require.LessOrEqual(t, allocs, 34.0)
}
