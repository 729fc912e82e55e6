package lmdb

import (
	"fmt"

	"github.com/webhookd/webhookd/dedupe"
)

// Map growth. LMDB maps the whole file; a write that does not fit fails with
// MDB_MAP_FULL, and the map may grow only while no transaction of this
// process is open (Store.mu). Another process may grow it too: LMDB then
// answers MDB_MAP_RESIZED, and the size it set is adopted.

// adoptRecordedMapSize makes the map at least as large as the size recorded
// in the environment, which a process that grew the map left there: a
// restart with the initial WEBHOOKD_MAP_SIZE must not shrink it back and
// grow it again, and another process must see what the server wrote.
func (s *Store) adoptRecordedMapSize() error {
	// Size 0 means "the size in the environment's meta page", or the data's
	// extent if that is larger.
	if err := s.env.SetMapSize(0); err != nil {
		return fmt.Errorf("dedupe: adopt map size: %w", err)
	}
	info, err := s.env.Info()
	if err != nil {
		return fmt.Errorf("dedupe: %w", err)
	}
	s.mapSize = info.MapSize
	if s.mapSize < s.opts.MapSize {
		if err := s.env.SetMapSize(s.opts.MapSize); err != nil {
			return fmt.Errorf("dedupe: set map size: %w", err)
		}
		s.mapSize = s.opts.MapSize
	}
	return nil
}

// growMap doubles the map size. LMDB allows it only while this process has
// no transaction open, hence the exclusive lock: readers wait a moment, none
// is cut off.
func (s *Store) growMap() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return dedupe.ErrClosed
	}
	next := s.mapSize * 2
	if next > s.opts.MaxMapSize {
		next = s.opts.MaxMapSize
	}
	if next <= s.mapSize {
		return fmt.Errorf("map full at its maximum size of %d bytes (Options.MaxMapSize)", s.mapSize)
	}
	if err := s.env.SetMapSize(next); err != nil {
		return fmt.Errorf("grow map to %d bytes: %w", next, err)
	}
	s.mapSize = next
	s.logger.Info("dedupe: map grown", "map_size", next)
	return nil
}

// adoptMapSize picks up a map size set by another process (MDB_MAP_RESIZED).
func (s *Store) adoptMapSize() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return dedupe.ErrClosed
	}
	if err := s.env.SetMapSize(0); err != nil {
		return fmt.Errorf("%w: adopt map size: %v", dedupe.ErrUnavailable, err)
	}
	if info, err := s.env.Info(); err == nil {
		s.mapSize = info.MapSize
	}
	return nil
}
