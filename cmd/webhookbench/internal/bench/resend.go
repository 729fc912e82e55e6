package bench

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// resendUntilOK sends each event, freshly signed, until it is answered
// 2xx, as a provider retries, from c clients, until deadline. It returns
// every answer it got.
func resendUntilOK(ctx context.Context, client *http.Client, url string, events []*event, c int, deadline time.Time) []delivery {
	queue := make(chan *event)
	var mu sync.Mutex
	var out []delivery
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for e := range queue {
				for time.Now().Before(deadline) && ctx.Err() == nil {
					e.resign(time.Now())
					r := send(ctx, client, url, e)
					mu.Lock()
					out = append(out, delivery{ev: e, sendResult: r})
					mu.Unlock()
					if r.status >= 200 && r.status <= 299 {
						break
					}
					// A 409 means another attempt holds the event; a 503
					// or no answer, that the downstream failed. Either
					// way the provider comes back later.
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	for _, e := range events {
		queue <- e
	}
	close(queue)
	wg.Wait()
	return out
}
