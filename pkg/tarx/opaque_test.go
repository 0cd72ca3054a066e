package tarx

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpaqueApplyHidesLowerSubdirs: an opaque whiteout hides everything
// the lower layers put in its directory (OCI image spec: whiteouts apply
// to resources of lower layers), as overlayfs does with
// trusted.overlay.opaque, also in a subdirectory that the same layer
// declares before the ".wh..wh..opq" entry.
func TestOpaqueApplyHidesLowerSubdirs(t *testing.T) {
	lower := mkTar(t,
		ent{name: "opq/", typ: tar.TypeDir, mode: 0o700},
		ent{name: "opq/sub/", typ: tar.TypeDir, mode: 0o700},
		ent{name: "opq/sub/secret", body: "s"},
		ent{name: "opq/deep/", typ: tar.TypeDir, mode: 0o700},
		ent{name: "opq/deep/old", body: "o"})
	upper := mkTar(t,
		ent{name: "opq/", typ: tar.TypeDir, mode: 0o700},
		ent{name: "opq/sub/", typ: tar.TypeDir, mode: 0o700},
		ent{name: "opq/.wh..wh..opq"},
		ent{name: "opq/sub/new", body: "n"},
		ent{name: "opq/deep/a/new", body: "d"})
	dest, _ := sandbox(t)
	for _, l := range [][]byte{lower, upper} {
		if err := Extract(bytes.NewReader(l), dest, Options{Whiteouts: WhiteoutApply, NoSameOwner: true}); err != nil {
			t.Fatal(err)
		}
	}
	mustRead(t, filepath.Join(dest, "opq/sub/new"), "n")
	mustRead(t, filepath.Join(dest, "opq/deep/a/new"), "d")
	for _, p := range []string{"opq/sub/secret", "opq/deep/old"} {
		if _, err := os.Lstat(filepath.Join(dest, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s of the lower layer survives the opaque whiteout of opq (%v)", p, err)
		}
	}
}
