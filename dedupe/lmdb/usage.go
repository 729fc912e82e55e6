package lmdb

import (
	"fmt"

	"github.com/webhookd/webhookd/dedupe"
)

// MapUsage is how much of the map the environment takes up, for the
// webhookd_store_map_* metrics and their alert.
type MapUsage struct {
	// Used is the bytes up to the last page LMDB has ever used: the
	// high-water mark of the data file. Pages freed below it are reused
	// before the file grows, so a store can be busier than Used says, never
	// larger.
	Used int64
	// Size is the current map size, which grows (doubling) on demand.
	Size int64
	// Max is the most the map may grow to (Options.MaxMapSize,
	// WEBHOOKD_MAX_MAP_SIZE). A write past it fails: the store is full.
	Max int64
}

// MapUsage reports the map's use.
func (s *Store) MapUsage() (MapUsage, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return MapUsage{}, dedupe.ErrClosed
	}
	info, err := s.env.Info()
	if err != nil {
		return MapUsage{}, fmt.Errorf("%w: env info: %v", dedupe.ErrUnavailable, err)
	}
	stat, err := s.env.Stat()
	if err != nil {
		return MapUsage{}, fmt.Errorf("%w: env stat: %v", dedupe.ErrUnavailable, err)
	}
	return MapUsage{Used: (info.LastPNO + 1) * int64(stat.PSize), Size: s.mapSize, Max: s.opts.MaxMapSize}, nil
}
