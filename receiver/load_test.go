package receiver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/webhookd/webhookd/receiver"
)

// A delivery counts as open from its body's read to its answer, whatever
// the answer; the delivery loop's Busy reads the count (deliver.Options).
func TestLoadCountsOpenDeliveries(t *testing.T) {
	c := &clock{t: time.Now()}
	load := receiver.NewLoad(2, c.Now)
	h := newHarness(t, func(h *harness) { h.config = func(cfg *receiver.Config) { cfg.Load = load } })
	arrived, release := make(chan struct{}, 2), make(chan struct{})
	h.down.setHandler(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	})
	done := make(chan reply, 2)
	for _, id := range []string{"evt_load_1", "evt_load_2"} {
		body := event(id, 100)
		go func() { done <- h.post("stripe", body, sign(t, body)) }()
	}
	<-arrived
	<-arrived
	require.Equal(t, 2, load.Open())
	require.True(t, load.Busy())
	close(release)
	for range 2 {
		require.Equal(t, http.StatusOK, (<-done).status)
	}
	require.Equal(t, 0, load.Open())
	require.True(t, load.Busy(), "busy for LoadHold after the count last reached busyAt")
	c.Advance(receiver.LoadHold - time.Millisecond)
	require.True(t, load.Busy())
	c.Advance(time.Millisecond)
	require.False(t, load.Busy())

	// A refusal is counted and uncounted too.
	require.Equal(t, http.StatusUnauthorized, h.post("stripe", event("evt_load_3", 1), "t=1,v1=00").status)
	require.Equal(t, 0, load.Open())
}

func TestNilLoadIsNeverBusy(t *testing.T) {
	var load *receiver.Load
	require.False(t, load.Busy())
	require.Equal(t, 0, load.Open())
	require.False(t, receiver.NewLoad(0, nil).Busy(), "busyAt is at least 1: none open is not busy")
}
