package lmdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ErrDamaged means the store's data file is not what its own header says
// (truncated, emptied, overwritten) or is missing from a directory that held
// a store. Open refuses such a store: LMDB would map it and die of SIGBUS
// at the first read past the end, or start afresh on an empty file and
// forward every acknowledged event again.
var ErrDamaged = errors.New("dedupe: store damaged")

// markerFile is written beside data.mdb once a store has been opened in a
// directory. Its presence says that directory held a store, so a missing or
// empty data.mdb is damage to report, never a reason to create a new store.
// It is a separate file because whatever emptied or removed data.mdb
// cannot be trusted to have left anything inside data.mdb.
const markerFile = "webhookd-store"

const markerText = `This directory holds a webhookd dedupe store (data.mdb).

webhookd refuses to open it when data.mdb is missing or empty while this
file exists: restore data.mdb from a backup (webhookd backup). To start
again with an empty store on purpose, delete this file as well.
`

// The parts of LMDB's file format read here (mdb.c, LMDB 0.9): every page
// starts with a 16-byte header (pgno uint64, pad uint16, flags uint16,
// lower/upper uint16); pages 0 and 1 are meta pages, P_META, each holding
// an MDB_meta after the header: magic uint32, version uint32, address
// uint64, mapsize uint64, two MDB_db records of 48 bytes (free space and
// main; the free one's first uint32 is the page size), last_pg uint64,
// txnid uint64. LMDB uses the meta with the higher txnid. Fields are in the
// machine's byte order; webhookd's targets are all little-endian.
const (
	lmdbPageHeader  = 16
	lmdbMetaSize    = 136
	lmdbMagic       = 0xBEEFC0DE
	lmdbDataVersion = 1
	lmdbPMeta       = 0x08
	lmdbMinPage     = 256
	lmdbMaxPage     = 0x10000
	lmdbInvalidPage = ^uint64(0) // md_root of an empty tree
)

// lmdbMeta is what a meta page says about the data file.
type lmdbMeta struct {
	PageSize uint32
	MainRoot uint64
	FreeRoot uint64
	Entries  uint64 // entries in the main tree (the named DBIs)
	LastPage uint64
	TxnID    uint64
}

// parseMeta reads the meta in the page that starts at b.
func parseMeta(b []byte) (lmdbMeta, error) {
	if len(b) < lmdbPageHeader+lmdbMetaSize {
		return lmdbMeta{}, errors.New("meta page cut short")
	}
	le := binary.LittleEndian
	if le.Uint16(b[10:])&lmdbPMeta == 0 {
		return lmdbMeta{}, errors.New("not a meta page")
	}
	m := b[lmdbPageHeader:]
	if le.Uint32(m[0:]) != lmdbMagic {
		return lmdbMeta{}, errors.New("not an LMDB file (bad magic)")
	}
	if v := le.Uint32(m[4:]); v != lmdbDataVersion {
		return lmdbMeta{}, fmt.Errorf("LMDB data version %d, want %d", v, lmdbDataVersion)
	}
	const free, main = 24, 24 + 48
	meta := lmdbMeta{
		PageSize: le.Uint32(m[free:]),
		FreeRoot: le.Uint64(m[free+40:]),
		Entries:  le.Uint64(m[main+32:]),
		MainRoot: le.Uint64(m[main+40:]),
		LastPage: le.Uint64(m[120:]),
		TxnID:    le.Uint64(m[128:]),
	}
	if ps := meta.PageSize; ps < lmdbMinPage || ps > lmdbMaxPage || ps&(ps-1) != 0 {
		return lmdbMeta{}, fmt.Errorf("page size %d", ps)
	}
	return meta, nil
}

// readMeta reads both meta pages of the data file at path with plain file
// I/O, without mapping it, and returns the one LMDB would use and the
// file's size.
func readMeta(path string) (lmdbMeta, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return lmdbMeta{}, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return lmdbMeta{}, 0, err
	}
	size := fi.Size()
	buf := make([]byte, lmdbPageHeader+lmdbMetaSize)
	var metas [2]lmdbMeta
	var off int64
	for i := range metas {
		if _, err := f.ReadAt(buf, off); err != nil {
			if errors.Is(err, io.EOF) {
				return lmdbMeta{}, size, fmt.Errorf("meta page %d is cut short", i)
			}
			return lmdbMeta{}, size, err
		}
		if metas[i], err = parseMeta(buf); err != nil {
			return lmdbMeta{}, size, fmt.Errorf("meta page %d: %v", i, err)
		}
		off = int64(metas[0].PageSize)
	}
	if metas[1].TxnID > metas[0].TxnID {
		return metas[1], size, nil
	}
	return metas[0], size, nil
}

// verifyFile checks data.mdb in dir before LMDB maps it. It returns
// (false, nil) when there is no data.mdb and dir never held a store, and an
// error wrapping ErrDamaged when data.mdb is missing from a directory that
// held one, is empty, is not an LMDB file, or is shorter than its own
// header says (the pages it names past the end would be SIGBUS when read).
func verifyFile(dir string) (exists bool, err error) {
	path := filepath.Join(dir, DataFile)
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		if _, merr := os.Stat(filepath.Join(dir, markerFile)); merr == nil {
			return false, damaged(path, "is missing, but this directory held a store (%s is there)", markerFile)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dedupe: %w", err)
	}
	if fi.Size() == 0 {
		// LMDB would take an empty file for a new environment. It never
		// leaves one behind itself, short of a crash during the very
		// first start.
		return true, damaged(path, "is empty (0 bytes)")
	}
	// A writer in another process may be rewriting a meta page while it is
	// read here; a torn read is retried before the file is called damaged.
	for attempt := 0; ; attempt++ {
		err = checkMeta(path)
		if err == nil || attempt == 2 {
			return true, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkMeta(path string) error {
	meta, size, err := readMeta(path)
	if err != nil {
		return damaged(path, "is not a readable LMDB file (%d bytes): %v", size, err)
	}
	ps := uint64(meta.PageSize)
	for _, root := range []uint64{meta.MainRoot, meta.FreeRoot} {
		if root != lmdbInvalidPage && root > meta.LastPage {
			return damaged(path, "has a tree root at page %d, past its last page %d", root, meta.LastPage)
		}
	}
	need := (meta.LastPage + 1) * ps
	if uint64(size) >= need {
		return nil
	}
	// LMDB does not write a page that a transaction allocated and freed
	// again (a "loose" page), so a healthy file may end before its last
	// page when the pages past the end are all free. Anything else there is
	// lost data.
	have := uint64(size) / ps
	free, err := freeTail(path, meta, have)
	if err == nil {
		for p := have; p <= meta.LastPage; p++ {
			if !free[p] {
				err = fmt.Errorf("page %d is in use", p)
				break
			}
		}
	}
	if err != nil {
		return damaged(path, "is truncated: %d bytes, but its header (transaction %d) uses %d pages of %d bytes, %d bytes (%v)",
			size, meta.TxnID, meta.LastPage+1, ps, need, err)
	}
	return nil
}

// Page and node layout (mdb.c): after the page header, lower/upper
// delimit an array of uint16 node offsets; a node is lo, hi, flags, ksize
// (uint16 each), key, value. A branch node's child page is lo|hi<<16|
// flags<<32; a leaf's value size is lo|hi<<16, and with F_BIGDATA the
// value is the number of its first overflow page, whose header's
// lower/upper field holds the count of pages it spans. The free-space
// tree maps a transaction id to a list of page numbers, its count first.
const (
	lmdbPBranch   = 0x01
	lmdbPLeaf     = 0x02
	lmdbPOverflow = 0x04
	lmdbFBigData  = 0x01
	lmdbMaxDepth  = 32
)

// freeTail reads the free-space tree of the data file at path with plain
// file I/O and returns the free page numbers at or after page from. It
// fails if a page of the tree itself lies at or after from (cut off) or
// does not parse.
func freeTail(path string, meta lmdbMeta, from uint64) (map[uint64]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ps := uint64(meta.PageSize)
	le := binary.LittleEndian
	free := map[uint64]bool{}
	read := func(pgno, n uint64) ([]byte, error) {
		if pgno >= from || pgno+n > from {
			return nil, fmt.Errorf("free-space tree page %d is past the end", pgno)
		}
		b := make([]byte, n*ps)
		if _, err := f.ReadAt(b, int64(pgno*ps)); err != nil {
			return nil, err
		}
		return b, nil
	}
	addList := func(v []byte) error {
		if len(v) < 8 || uint64(len(v)) < 8*(le.Uint64(v)+1) {
			return errors.New("free-space list does not parse")
		}
		for i, n := uint64(1), le.Uint64(v); i <= n; i++ {
			if p := le.Uint64(v[8*i:]); p >= from {
				free[p] = true
			}
		}
		return nil
	}
	seen := map[uint64]bool{}
	var walk func(pgno uint64, depth int) error
	walk = func(pgno uint64, depth int) error {
		if depth > lmdbMaxDepth || seen[pgno] {
			return errors.New("free-space tree has a cycle")
		}
		seen[pgno] = true
		pg, err := read(pgno, 1)
		if err != nil {
			return err
		}
		flags, lower := le.Uint16(pg[10:]), uint64(le.Uint16(pg[12:]))
		if lower < lmdbPageHeader || lower > ps {
			return fmt.Errorf("free-space tree page %d does not parse", pgno)
		}
		for i := uint64(lmdbPageHeader); i < lower; i += 2 {
			off := uint64(le.Uint16(pg[i:]))
			if off+8 > ps {
				return fmt.Errorf("free-space tree page %d does not parse", pgno)
			}
			node := pg[off:]
			lo, hi, nf, ks := uint64(le.Uint16(node)), uint64(le.Uint16(node[2:])), le.Uint16(node[4:]), uint64(le.Uint16(node[6:]))
			data := off + 8 + ks
			switch {
			case flags&lmdbPBranch != 0:
				if err := walk(lo|hi<<16|uint64(nf)<<32, depth+1); err != nil {
					return err
				}
			case flags&lmdbPLeaf != 0 && nf&lmdbFBigData != 0:
				if data+8 > ps {
					return fmt.Errorf("free-space tree page %d does not parse", pgno)
				}
				ov := le.Uint64(pg[data:])
				head, err := read(ov, 1)
				if err != nil {
					return err
				}
				if le.Uint16(head[10:])&lmdbPOverflow == 0 {
					return fmt.Errorf("page %d is not an overflow page", ov)
				}
				body, err := read(ov, uint64(le.Uint32(head[12:])))
				if err != nil {
					return err
				}
				size := lo | hi<<16
				if lmdbPageHeader+size > uint64(len(body)) {
					return fmt.Errorf("overflow page %d is too short", ov)
				}
				if err := addList(body[lmdbPageHeader : lmdbPageHeader+size]); err != nil {
					return err
				}
			case flags&lmdbPLeaf != 0:
				size := lo | hi<<16
				if data+size > ps {
					return fmt.Errorf("free-space tree page %d does not parse", pgno)
				}
				if err := addList(pg[data : data+size]); err != nil {
					return err
				}
			default:
				return fmt.Errorf("free-space tree page %d is neither branch nor leaf", pgno)
			}
		}
		return nil
	}
	if meta.FreeRoot == lmdbInvalidPage {
		return free, nil
	}
	return free, walk(meta.FreeRoot, 0)
}

func damaged(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s %s; restore it from a backup (webhookd backup), see docs/store.md, \"Backup, restore and check\"",
		ErrDamaged, path, fmt.Sprintf(format, args...))
}

// writeMarker records that dir holds a store, durably: written to a
// temporary file, synced, renamed, and the directory synced, which makes
// data.mdb's own directory entry durable too.
func writeMarker(dir string) error {
	path := filepath.Join(dir, markerFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("dedupe: write %s: %w", markerFile, err)
	}
	_, err = io.WriteString(f, markerText)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		var d *os.File
		if d, err = os.Open(dir); err == nil {
			err = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("dedupe: write %s: %w", filepath.Join(dir, markerFile), err)
	}
	return nil
}
