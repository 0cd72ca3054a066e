package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/checkpoint-restore/go-criu/v8/crit/images/pstree"
	"github.com/checkpoint-restore/go-criu/v8/magic"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rkt/rkt/pkg/schema"
)

// pstreeImage encodes entries as CRIU writes pstree.img.
func pstreeImage(t testing.TB, entries ...*pstree.PstreeEntry) []byte {
	m := magic.LoadMagic()
	b := binary.LittleEndian.AppendUint32(nil, uint32(m.ByName["IMG_COMMON"]))
	b = binary.LittleEndian.AppendUint32(b, uint32(m.ByName["PSTREE"]))
	for _, e := range entries {
		p, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

func entry(pid, pgid, sid uint32, threads ...uint32) *pstree.PstreeEntry {
	ppid := uint32(0)
	return &pstree.PstreeEntry{Pid: &pid, Ppid: &ppid, Pgid: &pgid, Sid: &sid, Threads: threads}
}

func TestPstreeMaxPID(t *testing.T) {
	img := pstreeImage(t, entry(7, 7, 7, 7), entry(12, 7, 7, 12, 40), entry(9, 31, 7, 9))
	if n, err := pstreeMaxPID(img); err != nil || n != 40 {
		t.Errorf("pstreeMaxPID: %d, %v; want 40 (a thread)", n, err)
	}
	if n, err := pstreeMaxPID(pstreeImage(t, entry(3, 3, 55, 3))); err != nil || n != 55 {
		t.Errorf("pstreeMaxPID: %d, %v; want 55 (a session)", n, err)
	}
	// threads packed (proto3 style), which criu's proto2 does not write
	// but a reader must take
	packed := protowire.AppendTag(nil, 1, protowire.VarintType)
	packed = protowire.AppendVarint(packed, 5)
	packed = protowire.AppendTag(packed, 5, protowire.BytesType)
	packed = protowire.AppendBytes(packed, protowire.AppendVarint(protowire.AppendVarint(nil, 6), 70))
	m := magic.LoadMagic()
	img2 := binary.LittleEndian.AppendUint32(nil, uint32(m.ByName["PSTREE"]))
	img2 = binary.LittleEndian.AppendUint32(img2, uint32(len(packed)))
	if n, err := pstreeMaxPID(append(img2, packed...)); err != nil || n != 70 {
		t.Errorf("pstreeMaxPID of packed threads, no IMG_COMMON: %d, %v; want 70", n, err)
	}
	for name, b := range map[string][]byte{
		"empty":           nil,
		"another magic":   binary.LittleEndian.AppendUint32(nil, 1),
		"truncated size":  img[:len(img)-len(img)/3],
		"cut in the size": pstreeImage(t)[:6],
	} {
		if _, err := pstreeMaxPID(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestMaxPendingRestorePID: the highest PID over the apps that have CRIU
// images to restore; none pending is 0.
func TestMaxPendingRestorePID(t *testing.T) {
	pod := t.TempDir()
	pd := schema.PodDir(pod)
	for name, img := range map[string][]byte{
		"one":   pstreeImage(t, entry(2, 2, 2, 2)),
		"two":   pstreeImage(t, entry(23, 23, 23, 23, 24)),
		"three": nil, // no restore pending
	} {
		dir := pd.App(name).Restore()
		if img == nil {
			dir = string(pd.App(name))
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if img != nil {
			if err := os.WriteFile(filepath.Join(dir, "pstree.img"), img, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, err := maxPendingRestorePID(pod); err != nil || n != 24 {
		t.Errorf("maxPendingRestorePID: %d, %v; want 24", n, err)
	}
	if err := os.WriteFile(filepath.Join(pd.App("one").Restore(), "pstree.img"), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := maxPendingRestorePID(pod); err == nil {
		t.Error("a bad pstree image gave no error")
	}
	if n, err := maxPendingRestorePID(t.TempDir() + "/none"); err == nil {
		t.Errorf("a pod without apps: %d, no error", n)
	}
}

// FuzzPstreeMaxPID: pstree images come from checkpoints users hand in.
func FuzzPstreeMaxPID(f *testing.F) {
	f.Add(pstreeImage(f, entry(7, 7, 7, 7), entry(12, 7, 7, 12, 40)))
	f.Add(pstreeImage(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := pstreeMaxPID(b)
		if err != nil && n != 0 {
			t.Errorf("an error with PID %d", n)
		}
	})
}
