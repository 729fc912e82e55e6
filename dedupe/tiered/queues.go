package tiered

import "context"

// QueueDestinations reads the shared store's queues, where every node's
// queued events are.
func (t *Store) QueueDestinations(ctx context.Context) ([]string, error) {
	return t.shared.QueueDestinations(ctx)
}
