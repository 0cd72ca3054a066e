package tests

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// median returns the middle of the durations.
func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// imageSizes returns the compressed and uncompressed bytes of img's layers.
func imageSizes(b *testing.B, img v1.Image) (compressed, uncompressed int64) {
	layers, err := img.Layers()
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range layers {
		n, _ := l.Size()
		compressed += n
		rc, err := l.Uncompressed()
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		for {
			k, err := rc.Read(buf)
			uncompressed += int64(k)
			if err != nil {
				break
			}
		}
		rc.Close()
	}
	return compressed, uncompressed
}

// BenchmarkFetchUnpack measures `rkt fetch` (download, verify, store,
// unpack every layer into the tree store) of a ~50 MB image of six layers
// from a loopback registry into an empty store; median of 5 runs.
// ns/op is the median fetch time; MB/s counts uncompressed layer bytes.
func BenchmarkFetchUnpack(b *testing.B) {
	env := testutil.NewEnv(b)
	reg := testutil.StartRegistry(b)
	layers := []v1.Layer{testutil.BusyboxLayer(b)}
	for i := 0; i < 5; i++ {
		layers = append(layers, testutil.RandomLayer(b, int64(100+i), fmt.Sprintf("data%d", i), 40, 10<<20))
	}
	img := testutil.Image(b, testutil.ImageConfig{Cmd: []string{"sh"}}, layers...)
	ref := reg.Push(b, "bench/big:1", img)
	compressed, uncompressed := imageSizes(b, img)

	var runs []time.Duration
	for i := 0; i < 5; i++ {
		if err := os.RemoveAll(casDir(env.DataDir)); err != nil {
			b.Fatal(err)
		}
		r := env.RunOK("fetch", "--no-progress", ref)
		runs = append(runs, r.Duration)
	}
	m := median(runs)
	b.ReportMetric(float64(m.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(uncompressed)/1e6/m.Seconds(), "MB/s")
	b.ReportMetric(float64(compressed)/1e6, "MB-compressed")
	b.ReportMetric(float64(uncompressed)/1e6, "MB-uncompressed")
	b.Logf("fetch+unpack of %.1f MB (%.1f MB compressed, %d layers): runs %v, median %s = %.1f MB/s",
		float64(uncompressed)/1e6, float64(compressed)/1e6, len(layers), runs, m, float64(uncompressed)/1e6/m.Seconds())
}

// BenchmarkImageList500 measures `rkt image list` (whole process) on a
// store of 500 images; median of 20 runs, table and JSON output.
func BenchmarkImageList500(b *testing.B) {
	env := testutil.NewEnv(b)
	reg := testutil.StartRegistry(b)
	base := testutil.BusyboxLayer(b)
	var refs []string
	for i := 0; i < 500; i++ {
		img := testutil.Image(b, testutil.ImageConfig{Cmd: []string{"sh"}, Labels: map[string]string{"n": fmt.Sprint(i)}},
			base, testutil.Layer(b, testutil.File("id", fmt.Sprint(i))))
		refs = append(refs, reg.Push(b, fmt.Sprintf("bench/img%03d:1", i), img))
	}
	start := time.Now()
	for i := 0; i < len(refs); i += 100 {
		env.RunOK(append([]string{"fetch", "--no-progress"}, refs[i:i+100]...)...)
	}
	fill := time.Since(start)
	if n := len(env.ListImages()); n != 500 {
		b.Fatalf("store has %d images, want 500", n)
	}
	measure := func(args ...string) time.Duration {
		var runs []time.Duration
		for i := 0; i < 20; i++ {
			r := env.RunOK(args...)
			if lines := strings.Count(r.Stdout, "\n"); args[len(args)-1] == "list" && lines != 501 {
				b.Fatalf("image list printed %d lines, want 501", lines)
			}
			runs = append(runs, r.Duration)
		}
		return median(runs)
	}
	baseline := measure("version")
	table := measure("image", "list")
	jsonOut := measure("image", "list", "--format=json")
	b.ReportMetric(float64(table.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(jsonOut.Nanoseconds())/1e6, "ms-json")
	b.ReportMetric(float64(baseline.Nanoseconds())/1e6, "ms-rkt-version")
	b.ReportMetric(fill.Seconds()/500*1e3, "ms-fetch-per-image")
	b.Logf("rkt image list with 500 images: median %s (table), %s (json), against %s for `rkt version`; filling the store took %s",
		table, jsonOut, baseline, fill)
}
