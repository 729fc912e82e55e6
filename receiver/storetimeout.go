package receiver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// DefaultStoreTimeout is Config.StoreTimeout's default.
const DefaultStoreTimeout = 5 * time.Second

// boundedStore gives every store call of a delivery its own deadline, so
// that a store that stops answering (a disk whose fsync never returns, a
// locked table) costs a delivery a 503 with Retry-After, not a goroutine
// parked for good. What a call that gave up may still do is the store's
// to keep safe: a claim that lands late is held by nobody and expires with
// its lease, and a complete, fail or release still lands after its caller
// gave up (the dedupetest case "settle of a caller gone still lands").
type boundedStore struct {
	Store
	timeout time.Duration
}

func (b boundedStore) Claim(ctx context.Context, key, fingerprint string, req *dedupe.Request) (lease dedupe.Lease, rec *dedupe.Record, err error) {
	err = b.call(ctx, "claim", func(ctx context.Context) error {
		lease, rec, err = b.Store.Claim(ctx, key, fingerprint, req)
		return err
	})
	return lease, rec, err
}

func (b boundedStore) Complete(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return b.call(ctx, "complete", func(ctx context.Context) error { return b.Store.Complete(ctx, l, resp) })
}

func (b boundedStore) Fail(ctx context.Context, l dedupe.Lease, resp dedupe.Response) error {
	return b.call(ctx, "fail", func(ctx context.Context) error { return b.Store.Fail(ctx, l, resp) })
}

func (b boundedStore) Release(ctx context.Context, l dedupe.Lease) error {
	return b.call(ctx, "release", func(ctx context.Context) error { return b.Store.Release(ctx, l) })
}

// call runs fn under the deadline and names a missed deadline
// ErrStoreUnavailable, whatever error the store made of it.
func (b boundedStore) call(ctx context.Context, what string, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	err := fn(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrStoreUnavailable) {
		return fmt.Errorf("%w: %s did not finish within the store timeout (%s): %w", ErrStoreUnavailable, what, b.timeout, err)
	}
	return err
}
