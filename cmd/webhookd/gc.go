package main

import (
	"bytes"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
)

// defaultGCPercent is serve's garbage-collection target when GOGC is unset.
// webhookd's live heap is a few MB (connections' buffers, the deliveries in
// flight), so at Go's default of 100 the collector runs every few MB of
// allocation: several times a second under load, about a tenth of the
// process's CPU in mark work, assists and sweeping (BENCHMARKS.md, "The
// GC default"; 2 to 4.5 % at 400). At 400 it runs a fifth
// as often, for a heap target of 5× the live heap instead of 2×: about
// 20 MB here.
const defaultGCPercent = 400

// cgroupMemoryMax is where a process in a cgroup v2 container (Docker,
// Kubernetes) reads the memory limit it will be killed at.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// memoryLimitShare is the part of the container's memory limit given to Go
// as its soft limit: the rest is for what the Go runtime does not count
// (LMDB's memory map, cgo, the kernel's socket buffers).
const memoryLimitShare = 0.8

// gcSettings is what serve sets at start; zero fields are left as they are.
type gcSettings struct {
	percent     int   // debug.SetGCPercent
	memoryLimit int64 // debug.SetMemoryLimit, bytes
}

// chooseGC decides serve's GC settings from the environment (getenv) and the
// container's memory limit (readFile of cgroupMemoryMax). An operator's
// GOGC or GOMEMLIMIT always wins: the runtime has already applied it, and
// the matching setting is left alone.
//
// The larger GC percent lets the heap grow to 5× the live heap where 100
// would stop at 2×. A burst of large deliveries (up to
// WEBHOOKD_MAX_BODY_BYTES each, held while they are forwarded) raises the
// live heap, and in a container that extra headroom could reach the memory
// limit and get the process killed where GOGC=100 would not. So when the
// process runs under a cgroup memory limit and GOMEMLIMIT is unset, the soft
// limit is set below it: the collector then runs as often as it must to stay
// under it, and only near it. Without a cgroup limit there is nothing to
// protect, and no limit is guessed.
func chooseGC(getenv func(string) string, readFile func(string) ([]byte, error)) gcSettings {
	var s gcSettings
	if getenv("GOGC") == "" {
		s.percent = defaultGCPercent
	}
	if getenv("GOMEMLIMIT") == "" {
		if b, err := readFile(cgroupMemoryMax); err == nil {
			// "max" (no limit) does not parse, and sets nothing.
			if n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && n > 0 {
				s.memoryLimit = int64(float64(n) * memoryLimitShare)
			}
		}
	}
	return s
}

// applyGC sets s in the runtime and logs what it set.
func applyGC(s gcSettings, log *slog.Logger) {
	var attrs []any
	if s.percent != 0 {
		debug.SetGCPercent(s.percent)
		attrs = append(attrs, "gc_percent", s.percent)
	}
	if s.memoryLimit != 0 {
		debug.SetMemoryLimit(s.memoryLimit)
		attrs = append(attrs, "memory_limit_bytes", s.memoryLimit)
	}
	if len(attrs) > 0 {
		log.Info("garbage collection defaults set (GOGC and GOMEMLIMIT override them)", attrs...)
	}
}

// setGCFromEnv is serve's entry point: chooseGC from the process's
// environment and cgroup, then applyGC.
func setGCFromEnv(log *slog.Logger) {
	applyGC(chooseGC(os.Getenv, os.ReadFile), log)
}
