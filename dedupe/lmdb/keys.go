package lmdb

import (
	"github.com/webhookd/webhookd/dedupe"

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
	// maxDBs is how many named DBIs an environment is opened for.
	maxDBs = 5
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

func splitExpiryKey(k []byte) (time.Time, string, bool) {
	if len(k) < 8 {
		return time.Time{}, "", false
	}
	return fromUnixNano(int64(binary.BigEndian.Uint64(k))), string(k[8:]), true
}
