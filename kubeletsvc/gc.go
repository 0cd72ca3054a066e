package kubeletsvc

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The service's live heap is small on a small node (2-3 MiB at 10 pods),
// under Go's 4 MiB heap minimum at the default GOGC=100: the heap, and
// most of the service's anonymous memory, is then that minimum or twice
// the live heap. While the live heap is small, GOGC=50 halves the minimum
// and makes the goal 1.5 times the live heap (~1.4 MiB less RSS at 10
// pods), for GCs twice as frequent of a heap that takes about a
// millisecond to mark. On a large node (a live heap above smallHeapMax)
// the default returns: there the GC's CPU matters more than a MiB.
const (
	smallHeapGOGC = 50
	smallHeapMax  = 16 << 20 // above it, GOGC=100
	smallHeapMin  = 12 << 20 // under it again, GOGC=50
)

// gcPercentFor returns the GOGC for a live heap of live bytes when the
// current one is cur (hysteresis between smallHeapMin and smallHeapMax).
func gcPercentFor(live uint64, cur int) int {
	switch {
	case live > smallHeapMax:
		return 100
	case live < smallHeapMin:
		return smallHeapGOGC
	}
	return cur
}

// tuneGC sets GOGC from the live heap after each GC, until stop is set;
// an operator's GOGC (environment) is left alone.
func tuneGC(stop *atomic.Bool) {
	if os.Getenv("GOGC") != "" {
		return
	}
	cur := smallHeapGOGC
	debug.SetGCPercent(cur)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	afterEachGC(func() bool {
		if stop.Load() {
			debug.SetGCPercent(100)
			return false
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return false
		}
		if p := gcPercentFor(sample[0].Value.Uint64(), cur); p != cur {
			cur = p
			debug.SetGCPercent(p)
		}
		return true
	})
}

// gcSentinel is an object made only to become garbage; it holds a
// pointer so that it is not packed with others by the tiny allocator.
type gcSentinel struct {
	_ *int
	_ [8]byte
}

// afterEachGC calls f (on the runtime's cleanup goroutine: f must not
// block) after each GC cycle while f returns true.
func afterEachGC(f func() bool) {
	runtime.AddCleanup(new(gcSentinel), func(struct{}) {
		if f() {
			afterEachGC(f)
		}
	}, struct{}{})
}
