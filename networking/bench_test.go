package networking

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
)

// BenchmarkSetupTeardown measures Setup and Teardown of one pod on the
// default network (bridge, host-local, masquerade), without and with a
// published port (portmap), and a pod with network "none".
func BenchmarkSetupTeardown(b *testing.B) {
	for _, bc := range []struct {
		name     string
		net      string
		ports    []schema.PortMapping
		neighbor bool // another pod stays on the network (NAT rule kept)
	}{
		{"default", "default", nil, false},
		{"default-with-neighbor", "default", nil, true},
		{"default+port", "default", []schema.PortMapping{{ContainerPort: 80, HostPort: 18080}}, false},
		{"none", NetNone, nil, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			requireRoot(b)
			cfg := testConfig(b)
			ctx := context.Background()
			if bc.neighbor {
				if _, err := Setup(ctx, cfg, newPod(b, cfg, bc.net)); err != nil {
					b.Fatalf("Setup neighbor: %v", err)
				}
			}
			var setup, teardown time.Duration
			for i := 0; b.Loop(); i++ {
				pn := newPod(b, cfg, bc.net)
				pn.Ports = bc.ports
				start := time.Now()
				if _, err := Setup(ctx, cfg, pn); err != nil {
					b.Fatalf("Setup: %v", err)
				}
				mid := time.Now()
				if err := Teardown(ctx, cfg, pn.Dir); err != nil {
					b.Fatalf("Teardown: %v", err)
				}
				setup += mid.Sub(start)
				teardown += time.Since(mid)
				_ = os.RemoveAll(filepath.Dir(pn.Dir))
			}
			b.ReportMetric(float64(setup.Microseconds())/float64(b.N)/1000, "setup-ms/op")
			b.ReportMetric(float64(teardown.Microseconds())/float64(b.N)/1000, "teardown-ms/op")
		})
	}
}
