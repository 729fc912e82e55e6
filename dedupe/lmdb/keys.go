package lmdb

import (
	"github.com/webhookd/webhookd/dedupe"

	"crypto/sha256"
	"encoding/binary"
	"time"
)

// LMDB layout. All DBIs live in one environment, so a record, its index
// entry and its count always change in the same transaction.
const (
	// dbiRecords maps a store key ("provider:event-key") to an encoded Record.
	dbiRecords = "records"
	// dbiExpiry is the time-ordered expiry index: 8-byte big-endian unix
	// nanoseconds of ExpiresAt, then the store key; the value is empty. The
	// pruner walks it from the start and stops at the first future entry.
	dbiExpiry = "expiry"
	// dbiMeta holds the store's own bookkeeping: the per-state record
	// counts (countsKey).
	dbiMeta = "meta"
	// dbiCreated is the index of records by creation time, newest last:
	// 8-byte big-endian unix nanoseconds of CreatedAt, then the store key;
	// the value is the record's state byte, so that Recent filters by state
	// and provider without decoding a record it does not return.
	dbiCreated = "created"
	// dbiRequests is the request log (requests.go).
	dbiRequests = "requests"
	// dbiDue is the queue's due index (queue.go): a destination's name, a
	// 0 byte, 8-byte big-endian unix nanoseconds of a QUEUED record's
	// NextAttempt, then queueSum of its store key; the value is the store
	// key. A delivery pass seeks to its destination and walks the entries
	// due, so that it costs what it takes, not the queue's depth.
	dbiDue = "due"
	// dbiWaiting indexes the QUEUED records not under an attempt's lease
	// by arrival: the destination, a 0 byte, 8-byte QueuedAt, queueSum;
	// the value is the store key. Its first entry of a destination is the
	// oldest waiting event.
	dbiWaiting = "waiting"
	// maxDBs is how many named DBIs an environment is opened for.
	maxDBs = 7
)

// lmdbMaxKey is LMDB's compiled-in key size limit (MDB_MAXKEYSIZE).
const lmdbMaxKey = 511

// dedupe.MaxKeyLen is LMDB's limit less the expiry index's 8-byte time
// prefix; this fails to compile if the two ever disagree.
const _ = uint(dedupe.MaxKeyLen-(lmdbMaxKey-8)) + uint((lmdbMaxKey-8)-dedupe.MaxKeyLen)

func expiryKey(dst []byte, at time.Time, key string) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixNano(at)))
	return append(dst, key...)
}

// createdKey is rec's entry in dbiCreated: the same layout as the expiry
// index's.
func createdKey(dst []byte, at time.Time, key string) []byte { return expiryKey(dst, at, key) }

// queueIndexKey is an entry's key in dbiDue or dbiWaiting. The store key
// is kept as its digest (queueSum), not whole: with the destination in
// front, a key of dedupe.MaxKeyLen would pass LMDB's limit. Entries of the
// same destination and instant are ordered by digest, which no caller
// depends on.
func queueIndexKey(dst []byte, destination string, at time.Time, key string) []byte {
	dst = append(dst, destination...)
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint64(dst, uint64(unixNano(at)))
	sum := sha256.Sum256([]byte(key))
	return append(dst, sum[:queueSum]...)
}

// queueSum is how many bytes of the key's SHA-256 an index entry holds.
const queueSum = 16

// queuePrefix is every index entry of destination's prefix.
func queuePrefix(destination string) []byte { return append([]byte(destination), 0) }

// splitQueueIndexKey returns the time of an entry of destination.
func splitQueueIndexKey(k []byte, destination string) (time.Time, bool) {
	n := len(destination) + 1
	if len(k) != n+8+queueSum || string(k[:n-1]) != destination || k[n-1] != 0 {
		return time.Time{}, false
	}
	return fromUnixNano(int64(binary.BigEndian.Uint64(k[n:]))), true
}

// Queue bookkeeping in dbiMeta: depthPrefix + destination holds the
// number of its waiting records (8 bytes big-endian), pausePrefix +
// destination the unix nanoseconds it was paused at; no entry: not paused.
const (
	depthPrefix = "depth\x00"
	pausePrefix = "pause\x00"
)

func splitExpiryKey(k []byte) (time.Time, string, bool) {
	if len(k) < 8 {
		return time.Time{}, "", false
	}
	return fromUnixNano(int64(binary.BigEndian.Uint64(k))), string(k[8:]), true
}
