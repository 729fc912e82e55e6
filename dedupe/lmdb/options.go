package lmdb

import (
	"time"

	"github.com/webhookd/webhookd/dedupe"
)

// Defaults for Options fields left zero.
const (
	DefaultMapSize    = 256 << 20 // 256 MiB; grows on demand
	DefaultMaxMapSize = 1 << 40   // 1 TiB of address space, not of disk
	DefaultMaxReaders = 1024
	DefaultMaxBatch   = 256
)

// Options configure a Store: the options every backend has, and LMDB's
// own. The zero value of every field means its default.
type Options struct {
	dedupe.Options

	// MapSize is the initial LMDB map size in bytes. The map doubles when
	// LMDB reports it full, up to MaxMapSize.
	MapSize int64
	// MaxMapSize bounds map growth.
	MaxMapSize int64
	// MaxReaders is the number of LMDB reader slots, shared by every
	// process that opens the store. A Store lets at most three quarters of
	// them be used by its own read transactions at once (more readers wait
	// for a slot rather than fail), which leaves the rest to the other
	// processes: webhookd keys and webhookd backup beside webhookd serve.
	// The first process to open the environment sets the number; later
	// ones use it.
	MaxReaders int
	// MaxBatch bounds how many writes one commit holds. 1 disables group
	// commit: every write is its own durable transaction.
	MaxBatch int
	// NoSync skips the fsync of each commit: faster, not durable. Tests only.
	NoSync bool

	// OnCommit, if set, is called by the writer after each write
	// transaction with the number of writes it held and the time it took,
	// the sync to disk included, whether it committed or not. It runs on the
	// writer's goroutine, in the path of every write: it must be quick and
	// must not call back into the Store.
	OnCommit func(batch int, d time.Duration)
}

func (o *Options) setDefaults() {
	o.Options.SetDefaults()
	if o.MapSize == 0 {
		o.MapSize = DefaultMapSize
	}
	if o.MaxMapSize == 0 {
		o.MaxMapSize = DefaultMaxMapSize
	}
	if o.MaxMapSize < o.MapSize {
		o.MaxMapSize = o.MapSize
	}
	if o.MaxReaders == 0 {
		o.MaxReaders = DefaultMaxReaders
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
}
