package lmdb

import (
	"fmt"

	"github.com/webhookd/webhookd/dedupe"
)

// MapUsage reports the map's use; Max is Options.MaxMapSize
// (WEBHOOKD_MAX_MAP_SIZE).
func (s *Store) MapUsage() (dedupe.MapUsage, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return dedupe.MapUsage{}, dedupe.ErrClosed
	}
	info, err := s.env.Info()
	if err != nil {
		return dedupe.MapUsage{}, fmt.Errorf("%w: env info: %v", dedupe.ErrUnavailable, err)
	}
	stat, err := s.env.Stat()
	if err != nil {
		return dedupe.MapUsage{}, fmt.Errorf("%w: env stat: %v", dedupe.ErrUnavailable, err)
	}
	return dedupe.MapUsage{Used: (info.LastPNO + 1) * int64(stat.PSize), Size: s.mapSize, Max: s.opts.MaxMapSize}, nil
}
