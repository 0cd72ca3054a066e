package stage0

import (
	"context"
	"testing"
	"time"
)

// BenchmarkList100 lists 100 pods of 2 apps (prepared: no supervisor), the
// disk work behind `rkt list` and the CRI List calls.
func BenchmarkList100(b *testing.B) {
	rt, err := New(Config{DataDir: b.TempDir(), Images: fakeImages{}, Stage1Path: "/nonexistent/stage1"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if _, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "a"}, {Image: "b"}}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		pods, err := rt.List(ctx)
		if err != nil || len(pods) != 100 {
			b.Fatalf("%d pods, %v", len(pods), err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/list")
}
