package lmdb

import (
	"errors"
	"fmt"
	"path/filepath"

	mdb "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/webhookd/webhookd/dedupe"
)

// CheckReport is what Check found. Damage is empty when the store is sound.
type CheckReport struct {
	File     string // the data file checked
	Size     int64  // its size in bytes
	PageSize int    // LMDB's page size
	Pages    uint64 // pages the newest meta page uses

	Records int                  // records walked, unreadable ones included
	ByState map[dedupe.State]int // readable records by state
	Index   int                  // expiry index entries walked
	Stale   int                  // index entries whose record is gone or has moved on: harmless, the pruner drops them
	// Created is how many creation-time index entries were walked, and
	// CreatedStale how many of them point at a record that is gone or
	// was created at another time: harmless, Recent passes over them.
	// A store whose creation-time index is not built yet (one an older
	// version wrote: Open builds it) has it skipped, both zero.
	Created      int
	CreatedStale int
	Damage       []Damage // in the order found
	damageAt     map[string]int
}

// Damage is one kind of damage Check found, with how often and a few of the
// keys (or places) where.
type Damage struct {
	Kind     string
	Count    int
	Examples []string // at most maxExamples, quoted
}

const maxExamples = 5

// Damaged reports whether Check found any damage.
func (r *CheckReport) Damaged() bool { return len(r.Damage) > 0 }

func (r *CheckReport) add(kind, example string) {
	if r.damageAt == nil {
		r.damageAt = map[string]int{}
	}
	i, ok := r.damageAt[kind]
	if !ok {
		i = len(r.Damage)
		r.damageAt[kind] = i
		r.Damage = append(r.Damage, Damage{Kind: kind})
	}
	d := &r.Damage[i]
	d.Count++
	if len(d.Examples) < maxExamples {
		d.Examples = append(d.Examples, example)
	}
}

// The kinds of damage Check reports.
const (
	DamageUnreadable = "records LMDB cannot hand over (a length on disk is out of range)"
	DamageUndecoded  = "records that do not decode"
	DamageState      = "records with an unknown state"
	DamageKey        = "records with an invalid key"
	DamageUnindexed  = "records without their expiry index entry (the pruner would never delete them)"
	DamageIndexKey   = "malformed expiry index entries"
	DamageCount      = "trees whose entry count disagrees with their walk"
	DamageWalk       = "trees whose walk stopped on an LMDB error"
	DamageCounts     = "record counts (what Stats answers) that disagree with the records"
	// The creation-time index is what the operator console lists records
	// by (Recent): a record without its entry is missing from every
	// listing, and an entry with another state than its record's hides
	// the record from the listing filtered by its state.
	DamageUncreated    = "records without their creation-time index entry (the console never lists them)"
	DamageCreatedState = "creation-time index entries whose state is not their record's (the console filters them wrongly)"
	DamageCreatedKey   = "malformed creation-time index entries"
)

// Check verifies the store in dir without changing anything: the data file
// against its header (as Open does), then, in one read-only transaction,
// every record (it decodes, its state is known, its expiry index entry is
// there, and its creation-time index entry with its state) and every
// entry of both indexes (it parses; one whose record is gone or has moved
// on is only counted as stale). It opens the environment
// read-only and may run while webhookd serve writes to it.
//
// An error means the store could not be checked at all: no store in dir
// (ErrNoStore), or a data file refused as Open refuses it (ErrDamaged).
// Damage found inside a readable store is in the report.
//
// LMDB keeps no checksums: a flipped bit in a body or a time is invisible
// to Check. It finds what breaks the structure it can see.
func Check(dir string) (*CheckReport, error) {
	exists, err := verifyFile(dir)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("%w: %s holds no store (%s is missing)", ErrNoStore, dir, DataFile)
	}
	path := filepath.Join(dir, DataFile)
	meta, size, err := readMeta(path)
	if err != nil {
		return nil, damaged(path, "%v", err)
	}
	r := &CheckReport{File: path, Size: size, PageSize: int(meta.PageSize), Pages: meta.LastPage + 1, ByState: map[dedupe.State]int{}}

	env, err := mdb.NewEnv()
	if err != nil {
		return nil, fmt.Errorf("dedupe: %w", err)
	}
	defer env.Close()
	if err := env.SetMaxDBs(maxDBs); err != nil {
		return nil, fmt.Errorf("dedupe: %w", err)
	}
	if err := env.Open(dir, mdb.Readonly, 0o640); err != nil {
		return nil, fmt.Errorf("dedupe: open %s read-only: %w", dir, err)
	}
	for attempt := 0; ; attempt++ {
		err = env.View(func(txn *mdb.Txn) error { return r.walk(txn) })
		if !isErrno(err, mdb.MapResized) || attempt == 3 {
			break
		}
		// serve grew the map meanwhile: adopt its size and start again.
		if err := env.SetMapSize(0); err != nil {
			return nil, fmt.Errorf("dedupe: %w", err)
		}
		*r = CheckReport{File: r.File, Size: r.Size, PageSize: r.PageSize, Pages: r.Pages, ByState: map[dedupe.State]int{}}
	}
	if err != nil {
		return nil, fmt.Errorf("dedupe: check %s: %w", dir, err)
	}
	return r, nil
}

// walk runs the checks in txn. Its error means the check could not run
// (a DBI missing); damage goes into r.
func (r *CheckReport) walk(txn *mdb.Txn) error {
	records, err := txn.OpenDBI(dbiRecords, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dbiRecords, err)
	}
	expiry, err := txn.OpenDBI(dbiExpiry, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dbiExpiry, err)
	}
	created, haveCreated, err := r.openCreated(txn)
	if err != nil {
		return err
	}
	r.Records = r.walkTree(txn, records, dbiRecords, func(k, v []byte) {
		key := string(k)
		rec, err := decodeRecord(key, v, noBodies)
		switch {
		case err != nil:
			r.add(DamageUndecoded, fmt.Sprintf("%q", key))
			return
		case dedupe.CheckKey(key) != nil:
			r.add(DamageKey, fmt.Sprintf("%q", key))
			return
		case !validState(rec.State):
			r.add(DamageState, fmt.Sprintf("%q (%v)", key, rec.State))
			return
		}
		r.ByState[rec.State]++
		_, err = getGuarded(txn, expiry, expiryKey(nil, rec.ExpiresAt, key))
		switch {
		case mdb.IsNotFound(err):
			r.add(DamageUnindexed, fmt.Sprintf("%q", key))
		case err != nil:
			r.add(DamageWalk, fmt.Sprintf("%s lookup for %q: %v", dbiExpiry, key, err))
		}
		if haveCreated {
			r.checkCreatedOf(txn, created, &rec)
		}
	})
	r.checkCounts(txn)
	r.Index = r.walkTree(txn, expiry, dbiExpiry, func(k, _ []byte) {
		at, key, ok := splitExpiryKey(k)
		if !ok {
			r.add(DamageIndexKey, fmt.Sprintf("%q", k))
			return
		}
		v, err := getGuarded(txn, records, []byte(key))
		if err != nil {
			// Gone (stale), or unreadable and already counted as a record.
			if mdb.IsNotFound(err) {
				r.Stale++
			}
			return
		}
		if rec, err := decodeRecord(key, v, noBodies); err == nil && unixNano(rec.ExpiresAt) != unixNano(at) {
			// The record has its own entry, checked above; this one is
			// left from an earlier state.
			r.Stale++
		}
	})
	if haveCreated {
		r.walkCreated(txn, created, records)
	}
	return nil
}

// openCreated opens the creation-time index for the walk. It reports
// false, without damage, for a store whose index is not built yet: one
// an older version wrote has no such DBI, or has it empty beside records
// (the condition on which Open builds it, so the next Open fills it).
func (r *CheckReport) openCreated(txn *mdb.Txn) (mdb.DBI, bool, error) {
	created, err := txn.OpenDBI(dbiCreated, 0)
	if mdb.IsNotFound(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("open %s: %w", dbiCreated, err)
	}
	ci, err := txn.Stat(created)
	if err != nil {
		return 0, false, fmt.Errorf("stat %s: %w", dbiCreated, err)
	}
	return created, ci.Entries > 0, nil
}

// checkCreatedOf checks that rec has its creation-time index entry, with
// its state. An entry of another length is malformed, and reported as such
// by walkCreated.
func (r *CheckReport) checkCreatedOf(txn *mdb.Txn, created mdb.DBI, rec *dedupe.Record) {
	v, err := getGuarded(txn, created, createdKey(nil, rec.CreatedAt, rec.Key))
	switch {
	case mdb.IsNotFound(err):
		r.add(DamageUncreated, fmt.Sprintf("%q", rec.Key))
	case err != nil:
		r.add(DamageWalk, fmt.Sprintf("%s lookup for %q: %v", dbiCreated, rec.Key, err))
	case len(v) == 1 && dedupe.State(v[0]) != rec.State:
		r.add(DamageCreatedState, fmt.Sprintf("%q (%v, its record %v)", rec.Key, dedupe.State(v[0]), rec.State))
	}
}

// walkCreated walks the creation-time index with Recent's reading: an
// entry must parse and carry one state byte (Recent passes over one that
// does not, so its record would be missing from the console); one whose
// record is gone or was created at another time is stale, as Recent
// passes over it. An entry of a record that matches was checked with the
// record.
func (r *CheckReport) walkCreated(txn *mdb.Txn, created, records mdb.DBI) {
	r.Created = r.walkTree(txn, created, dbiCreated, func(k, v []byte) {
		at, key, ok := splitExpiryKey(k)
		if !ok || len(v) != 1 {
			r.add(DamageCreatedKey, fmt.Sprintf("%q", k))
			return
		}
		rv, err := getGuarded(txn, records, []byte(key))
		if err != nil {
			// Gone (stale), or unreadable and already counted as a record.
			if mdb.IsNotFound(err) {
				r.CreatedStale++
			}
			return
		}
		if rec, err := decodeRecord(key, rv, noBodies); err == nil && unixNano(rec.CreatedAt) != unixNano(at) {
			r.CreatedStale++
		}
	})
}

// checkCounts compares the counts entry with the records walked. A store
// no version with counts has opened yet has no meta DBI: nothing to
// compare. Nor is there when a record is damaged: the counts cannot be
// checked against records that cannot say their state, and that damage is
// reported already.
func (r *CheckReport) checkCounts(txn *mdb.Txn) {
	meta, err := txn.OpenDBI(dbiMeta, 0)
	if mdb.IsNotFound(err) {
		return
	}
	if err != nil {
		r.add(DamageWalk, fmt.Sprintf("%s: %v", dbiMeta, err))
		return
	}
	c, found, err := readCounts(txn, meta)
	switch {
	case err != nil:
		r.add(DamageCounts, err.Error())
		return
	case !found:
		r.add(DamageCounts, "the counts entry is missing")
		return
	}
	walked := 0
	for _, n := range r.ByState {
		walked += n
	}
	if walked != r.Records {
		return
	}
	for st := dedupe.InFlight; st <= dedupe.Queued; st++ {
		if n := c[st-dedupe.InFlight]; n != uint64(r.ByState[st]) {
			r.add(DamageCounts, fmt.Sprintf("%v: %d counted, %d walked", st, n, r.ByState[st]))
		}
	}
}

// walkTree calls visit for every entry of dbi, in one cursor walk, and
// returns how many entries it met. An entry lmdb-go panics on is counted
// as unreadable and the walk goes on: the cursor stands on it already.
func (r *CheckReport) walkTree(txn *mdb.Txn, dbi mdb.DBI, name string, visit func(k, v []byte)) int {
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		r.add(DamageWalk, fmt.Sprintf("%s: %v", name, err))
		return 0
	}
	defer cur.Close()
	n, last, inARow := 0, "", 0
	for op := uint(mdb.First); ; op = mdb.Next {
		k, v, err := cursorGet(cur, op)
		if errors.Is(err, dedupe.ErrCorrupt) {
			n++
			r.add(DamageUnreadable, fmt.Sprintf("%s: %s", name, afterKey(last)))
			if inARow++; inARow == 1000 {
				r.add(DamageWalk, fmt.Sprintf("%s: stopped after 1000 unreadable entries in a row", name))
				return n
			}
			continue
		}
		inARow = 0
		if mdb.IsNotFound(err) {
			break
		}
		if err != nil {
			r.add(DamageWalk, fmt.Sprintf("%s: %s: %v", name, afterKey(last), err))
			return n
		}
		n++
		last = string(k)
		visit(k, v)
	}
	if st, err := txn.Stat(dbi); err != nil {
		r.add(DamageWalk, fmt.Sprintf("%s: %v", name, err))
	} else if int(st.Entries) != n {
		r.add(DamageCount, fmt.Sprintf("%s: %d entries counted, %d walked", name, st.Entries, n))
	}
	return n
}

// cursorGet is cur.Get with lmdb-go's panics made ErrCorrupt.
func cursorGet(cur *mdb.Cursor, op uint) (k, v []byte, err error) {
	defer recoverCorrupt(&err, func() string { return "cursor" })
	return cur.Get(nil, nil, op)
}

// getGuarded is txn.Get with lmdb-go's panics made ErrCorrupt.
func getGuarded(txn *mdb.Txn, dbi mdb.DBI, key []byte) (v []byte, err error) {
	defer recoverCorrupt(&err, func() string { return fmt.Sprintf("key %q", key) })
	return txn.Get(dbi, key)
}
