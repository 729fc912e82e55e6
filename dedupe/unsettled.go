package dedupe

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Retrying an answer's write.
//
// Once the core service has answered, the write recording its answer
// (Complete, Fail) must land: left undone, the key stays IN_FLIGHT, and
// once its lease passes the gateway's next delivery of an event the core
// already has is forwarded again (docs/store.md, "The store under
// faults"). A backend whose finish fails with the store unavailable (a
// Postgres that hangs or restarts, a full disk), or whose outcome is
// unknown, therefore runs it again, in the background, until it lands or
// its lease passes. A retry is safe: the write is guarded by the lease's
// token, so one that finds the lease gone (taken over, released, or
// recorded by an earlier attempt whose reply was lost) changes nothing.
//
// The budget is the lease: after it, another claim may take the key over
// on any node, and the answer no longer decides what the key holds. While
// a retry is pending, the node that runs it refuses its own claims of the
// key (ErrAnswerPending: 503 with Retry-After), even should the lease
// pass meanwhile by the store's clock: a claim there would be a second
// forward of an event whose answer this node holds.

// RetryDelay is how long a backend waits before the attempt-th retry
// (from 1) of a failed write: from 50 ms, doubling, at most a second, so
// that a store back from a short outage is written to within a second,
// and a long one costs one statement a second per pending answer.
func RetryDelay(attempt int) time.Duration {
	const first, most = 50 * time.Millisecond, time.Second
	if attempt < 1 {
		attempt = 1
	}
	d := first
	for i := 1; i < attempt && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// WriteAttempt is how one write of an answer ended, for Unsettled.Retry.
type WriteAttempt struct {
	Key string
	// Tries is how many times the answer was written before this attempt.
	Tries int
	// Until is the lease's end, the budget of the retries.
	Until time.Time
	// Landed: the answer is recorded (Err is nil).
	Landed bool
	// Err is the attempt's failure; nil when it landed or found the lease
	// gone.
	Err error
	// Retryable: Err is a failure another attempt may not meet (the store
	// unavailable), not a refusal of the write itself.
	Retryable bool
}

// Retry decides, once an attempt of an answer's write has ended, whether
// to write it again: if the attempt failed retryably and the lease runs at
// now, it holds the key (from the first failure on), schedules resend
// after RetryDelay and reports true. Otherwise it drops the key held by
// earlier attempts, logging how the retries ended, and reports false.
func (u *Unsettled) Retry(a WriteAttempt, now time.Time, logger *slog.Logger, resend func()) bool {
	held := a.Tries > 0
	if a.Err == nil || !a.Retryable || !now.Before(a.Until) {
		if !held {
			return false
		}
		u.Drop(a.Key)
		switch {
		case a.Landed:
			logger.Info("dedupe: recorded an answer after retrying its write", "key", a.Key, "retries", a.Tries)
		case a.Err == nil:
			logger.Warn("dedupe: a retried answer found its lease gone: recorded by an earlier attempt whose reply was lost, or the key was taken over or deleted",
				"key", a.Key, "retries", a.Tries)
		default:
			logger.Error("dedupe: could not record an answer before its lease passed or the store closed; the next delivery of the event may be forwarded again",
				"key", a.Key, "retries", a.Tries, "error", a.Err.Error())
		}
		return false
	}
	if !held {
		u.Hold(a.Key)
	}
	if !u.After(RetryDelay(a.Tries+1), resend) {
		u.Drop(a.Key)
		logger.Error("dedupe: the store closed before an answer could be recorded; the next delivery of the event may be forwarded again",
			"key", a.Key, "error", a.Err.Error())
		return false
	}
	return true
}

// Retrying is err, the first failure of an answer's write, saying that
// the write goes on in the background.
func Retrying(err error) error {
	return fmt.Errorf("%w (the write is retried in the background until it lands or the lease passes)", err)
}

// Unsettled is a backend's set of answers being retried (see above): the
// keys they hold, and the timers of the retries waiting for their turn.
// The zero value is ready to use; it is safe for concurrent use.
type Unsettled struct {
	held atomic.Int64 // len(keys), read without the lock on every claim

	mu      sync.Mutex
	keys    map[string]int // key -> answers being retried
	waiting map[*time.Timer]func()
	flushed bool
	running sync.WaitGroup
}

// Hold marks key as holding an answer being retried, until Drop.
func (u *Unsettled) Hold(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.keys == nil {
		u.keys = make(map[string]int)
	}
	u.keys[key]++
	u.held.Add(1)
}

// Drop undoes one Hold of key.
func (u *Unsettled) Drop(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.keys[key] == 0 {
		return
	}
	u.held.Add(-1)
	if u.keys[key]--; u.keys[key] == 0 {
		delete(u.keys, key)
	}
}

// Holds reports whether an answer of key is being retried. It costs an
// atomic load while none is.
func (u *Unsettled) Holds(key string) bool {
	if u.held.Load() == 0 {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.keys[key] > 0
}

// Len is the number of answers being retried.
func (u *Unsettled) Len() int { return int(u.held.Load()) }

// After runs fn after d, on a goroutine of its own, and reports true; or
// runs nothing and reports false once Flush has begun.
func (u *Unsettled) After(d time.Duration, fn func()) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.flushed {
		return false
	}
	if u.waiting == nil {
		u.waiting = make(map[*time.Timer]func())
	}
	u.running.Add(1)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		u.mu.Lock()
		delete(u.waiting, t)
		u.mu.Unlock()
		defer u.running.Done()
		fn()
	})
	u.waiting[t] = fn
	return true
}

// Flush runs at once every fn still waiting for its time, refuses new
// ones (After reports false), and returns once every fn has returned: a
// closing store gives each pending answer one last attempt.
func (u *Unsettled) Flush() {
	u.mu.Lock()
	u.flushed = true
	var now []func()
	for t, fn := range u.waiting {
		if t.Stop() {
			now = append(now, fn)
			delete(u.waiting, t)
		}
	}
	u.mu.Unlock()
	for _, fn := range now {
		fn()
		u.running.Done()
	}
	u.running.Wait()
}
