package store

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// benchData returns n bytes of deterministic data that compresses about
// like binaries do (~2:1): random bytes interleaved with repeated words.
func benchData(rng *rand.Rand, n int) string {
	words := []string{"lib", "usr", "share", "locale", "config", "python3", "module", "\x00\x00\x00\x00", "ELF", "main"}
	var sb strings.Builder
	sb.Grow(n)
	rnd := make([]byte, 64)
	for sb.Len() < n {
		rng.Read(rnd)
		sb.Write(rnd[:rng.Intn(64)])
		for range rng.Intn(12) {
			sb.WriteString(words[rng.Intn(len(words))])
		}
	}
	return sb.String()[:n]
}

// benchImage builds a ~50 MB image of 5 layers with files of 4 KiB..1 MiB.
func benchImage(b *testing.B) (v1.Image, int64) {
	rng := rand.New(rand.NewSource(42))
	var layers [][]entry
	var total int64
	for l := range 5 {
		var es []entry
		var size int
		for i := 0; size < 10<<20; i++ {
			n := 4 << 10
			if i%10 == 0 {
				n = 1 << 20
			} else if i%3 == 0 {
				n = 64 << 10
			}
			es = append(es, entry{name: fmt.Sprintf("layer%d/dir%d/file%d", l, i%16, i), body: benchData(rng, n)})
			size += n
		}
		total += int64(size)
		layers = append(layers, es)
	}
	return testImage(b, "BENCH=1", layers...), total
}

// BenchmarkFetchUnpack measures fetching a ~50 MB, 5-layer image from a
// registry on 127.0.0.1 and unpacking every layer into the tree store, one
// after the other (Fetch, then LayerPaths: each layer decompressed twice)
// and pipelined (Fetch with Unpack, as Pull does: each layer unpacked from
// its download). MB/s is of uncompressed layer content.
func BenchmarkFetchUnpack(b *testing.B) {
	img, total := benchImage(b)
	reg := startRegistry(b)
	ref := reg.push(b, "bench/big:1", img)
	var compressed int64
	layers, _ := img.Layers()
	for _, l := range layers {
		n, _ := l.Size()
		compressed += n
	}
	ctx := context.Background()
	b.Run("sequential", func(b *testing.B) {
		b.SetBytes(total)
		var fetchTime, unpackTime time.Duration
		for range b.N {
			b.StopTimer()
			s := newStore(b)
			b.StartTimer()
			t0 := time.Now()
			got, err := s.Fetch(ctx, ref, FetchOptions{})
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := s.LayerPaths(ctx, got); err != nil {
				b.Fatal(err)
			}
			fetchTime += t1.Sub(t0)
			unpackTime += time.Since(t1)
		}
		b.ReportMetric(float64(compressed)/1e6, "compressed-MB")
		b.ReportMetric(fetchTime.Seconds()*1000/float64(b.N), "fetch-ms/op")
		b.ReportMetric(unpackTime.Seconds()*1000/float64(b.N), "unpack-ms/op")
	})
	b.Run("pipelined", func(b *testing.B) {
		b.SetBytes(total)
		for range b.N {
			b.StopTimer()
			s := newStore(b)
			b.StartTimer()
			got, err := s.Fetch(ctx, ref, FetchOptions{Unpack: true})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if paths, err := s.LayerPaths(ctx, got); err != nil || len(paths) != 5 {
				b.Fatalf("layers not unpacked: %v", err)
			}
			b.StartTimer()
		}
	})
}

// BenchmarkListImages500 measures ListImages on a store holding 500 images.
func BenchmarkListImages500(b *testing.B) {
	s, _ := storeOf500Images(b)
	b.ResetTimer()
	for range b.N {
		if imgs, err := s.ListImages(); err != nil || len(imgs) != 500 {
			b.Fatalf("%d images, %v", len(imgs), err)
		}
	}
}

// BenchmarkKeptIndexAfterWrite500 measures ResolveImage (ImageStatus) on
// a Store that keeps its index (the kubelet-service's), holding 500
// images, each call after a write of one image's record (a MarkUsed at a
// container start): the index is read again, and only that record
// decoded.
func BenchmarkKeptIndexAfterWrite500(b *testing.B) {
	s, ids := storeOf500Images(b)
	s.KeepIndex()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if err := s.update(func(tx *txn) error {
			r, err := tx.getImage(ids[i%len(ids)])
			if err != nil {
				return err
			}
			r.LastUsedAt = time.Now()
			return tx.putImage(r)
		}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.ResolveImage("docker.io/library/img7:latest"); err != nil {
			b.Fatal(err)
		}
	}
}

// storeOf500Images returns a store holding 500 images and their IDs.
func storeOf500Images(b *testing.B) (*Store, []string) {
	s := newStore(b)
	cfg := `{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["sh"],"Labels":{"a":"b"}},"rootfs":{"type":"layers","diff_ids":["sha256:` + strings.Repeat("1", 64) + `"]},"history":[{"created":"2024-01-01T00:00:00Z","created_by":"ADD file in /"}]}`
	var ids []string
	err := s.update(func(tx *txn) error {
		for i := range 500 {
			h := fmt.Sprintf("%064x", i+1)
			r := &imageRecord{
				Image: Image{ID: "sha256:" + h, ManifestDigest: "sha256:" + h, Size: int64(i) << 20,
					Layers:     []Layer{{Digest: "sha256:" + h, DiffID: "sha256:" + h, ChainID: "sha256:" + h, Size: 1 << 20}},
					ImportedAt: time.Now(), LastUsedAt: time.Now()},
				ConfigRaw: []byte(cfg),
			}
			if err := tx.setRef(r, fmt.Sprintf("docker.io/library/img%d:latest", i), false); err != nil {
				return err
			}
			if err := tx.putImage(r); err != nil {
				return err
			}
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return s, ids
}

// BenchmarkResolveImage measures one resolve by name: a read-only open of
// the index (flock, mmap), a lookup and the close.
func BenchmarkResolveImage(b *testing.B) {
	reg := startRegistry(b)
	s := newStore(b)
	ref := reg.push(b, "bench/resolve:1", testImage(b, "R=1", []entry{{name: "r", body: "r"}}))
	if _, err := s.Fetch(context.Background(), ref, FetchOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.ResolveImage(ref); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUsage measures Usage (the CRI's ImageFsInfo, which the kubelet
// asks for every few seconds) on a store of 5 images of 4 layers of 1000
// small files each, unchanged for a while: once measured, a call stats
// the store's few directories and the files outside blobs and trees;
// full-walk is what each call cost before.
func BenchmarkUsage(b *testing.B) {
	reg := startRegistry(b)
	s := newStore(b)
	for i := range 5 {
		var layers [][]entry
		for l := range 4 {
			es := make([]entry, 1000)
			for f := range es {
				es[f] = entry{name: fmt.Sprintf("d%d/f%d", f%20, f), body: fmt.Sprint(i, l, f)}
			}
			layers = append(layers, es)
		}
		ref := reg.push(b, fmt.Sprintf("usage/img%d:1", i), testImage(b, fmt.Sprint("U=", i), layers...))
		if _, err := s.Fetch(context.Background(), ref, FetchOptions{Unpack: true}); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(racyMtime) // a store that has not changed for a while
	b.Run("kept", func(b *testing.B) {
		if _, err := s.Usage(); err != nil { // the first call measures all
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := s.Usage(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full-walk", func(b *testing.B) { // what every call cost before
		for range b.N {
			if _, err := walkUsage(s.Dir()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
