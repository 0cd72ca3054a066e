package kubeletsvc

import (
	"runtime"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live      uint64
		cur, want int
	}{
		{2 << 20, 100, smallHeapGOGC},
		{2 << 20, smallHeapGOGC, smallHeapGOGC},
		{14 << 20, smallHeapGOGC, smallHeapGOGC}, // between the bounds: kept
		{14 << 20, 100, 100},
		{20 << 20, smallHeapGOGC, 100},
		{11 << 20, 100, smallHeapGOGC},
	} {
		if got := gcPercentFor(c.live, c.cur); got != c.want {
			t.Errorf("gcPercentFor(%d MiB, %d) = %d, want %d", c.live>>20, c.cur, got, c.want)
		}
	}
}

func TestAfterEachGC(t *testing.T) {
	calls := make(chan int, 10)
	n := 0
	afterEachGC(func() bool {
		n++
		calls <- n
		return n < 3
	})
	for want := 1; want <= 3; want++ {
		deadline := time.After(10 * time.Second)
	wait:
		for {
			runtime.GC()
			select {
			case got := <-calls:
				if got != want {
					t.Fatalf("call %d, want %d", got, want)
				}
				break wait
			case <-deadline:
				t.Fatalf("no call %d after GCs", want)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	time.Sleep(50 * time.Millisecond)
	if len(calls) != 0 {
		t.Errorf("called again after returning false")
	}
}
