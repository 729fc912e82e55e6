package lmdb

// MapSize returns the current map size in bytes.
func (s *Store) MapSize() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mapSize
}

// openNestEveryOp opens a store whose writer runs every op of a batch in
// its own nested transaction: the baseline of BenchmarkClaimComplete's
// mode=nested. The writer reads the setting per batch, and no batch runs
// before a write is made.
func openNestEveryOp(dir string, opts Options) (*Store, error) {
	s, err := Open(dir, opts)
	if err != nil {
		return nil, err
	}
	s.nestEveryOp.Store(true)
	return s, nil
}
