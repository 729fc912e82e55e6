package dedupe

// MapUsage is how much of a memory-mapped store's map its data takes up
// (dedupe/lmdb's Store.MapUsage), for metrics and alerts that must not link
// the backend.
type MapUsage struct {
	// Used is the bytes up to the last page the data file has ever used:
	// its high-water mark. Pages freed below it are reused before the file
	// grows, so a store can be busier than Used says, never larger.
	Used int64
	// Size is the current map size, which grows (doubling) on demand.
	Size int64
	// Max is the most the map may grow to; a write past it fails: the
	// store is full.
	Max int64
}
