package tests

import (
	"debug/elf"
	"strings"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// TestRktBinaryLean keeps out of the rkt binary what made the
// kubelet-service's RSS 10 MiB larger (Documentation/performance.md):
// dynamic linking (libc, libseccomp mapped in every rkt process) and
// html/template, whose reflective method calls make the linker keep every
// exported method of every reachable type (grpc brings it in through
// golang.org/x/net/trace unless built with the grpcnotrace tag), and
// klauspost's zstd encoder (rkt only decompresses; go-containerregistry's
// tarball.LayerFromFile linked it: 0.24 MB).
func TestRktBinaryLean(t *testing.T) {
	f, err := elf.Open(testutil.RKTBin(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("rkt is dynamically linked (build it with CGO_ENABLED=0)")
		}
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatalf("rkt has no symbol table: %v", err)
	}
	bad := []string{"html/template.", "golang.org/x/net/trace.", "github.com/opencontainers/runc/libcontainer",
		"github.com/seccomp/libseccomp-golang.", "github.com/klauspost/compress/zstd.(*Encoder)."}
	found := map[string]bool{}
	for _, s := range syms {
		for _, b := range bad {
			if strings.HasPrefix(s.Name, b) {
				found[b] = true
			}
		}
	}
	for b := range found {
		t.Errorf("rkt links %s (the kubelet-service's memory: see Documentation/performance.md)", strings.TrimSuffix(b, "."))
	}
}
