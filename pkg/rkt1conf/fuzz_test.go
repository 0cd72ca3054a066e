package rkt1conf

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzConfig reads arbitrary paths.d, stage1.d and auth.d files of two
// configuration directories: DataDir may refuse them but must not panic,
// and a data directory it accepts is absolute and set by a paths file of
// one of them; Unused never fails.
func FuzzConfig(f *testing.F) {
	f.Add([]byte(`{"rktKind":"paths","rktVersion":"v1","data":"/srv/rkt","stage1-images":"/s"}`), []byte(`{"rktKind":"paths","rktVersion":"v1","data":"/var/lib/rkt2"}`), []byte(`{"rktKind":"auth","rktVersion":"v1"}`))
	f.Add([]byte(`{"rktKind":"paths","rktVersion":"v1","data":"rel"}`), []byte(`{"rktKind":"paths","rktVersion":"v1","data":7}`), []byte(`[`))
	f.Add([]byte(`{"rktKind":["paths"],"rktVersion":{"a":1}}`), []byte(`null`), []byte(`{"rktKind":"stage1","rktVersion":"v1","name":"x"}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`), []byte(`{"rktKind":"paths","rktVersion":"v1","data":"/\u0000"}`), []byte(``))
	f.Fuzz(func(t *testing.T, sys, local, other []byte) {
		sysDir, localDir := t.TempDir(), t.TempDir()
		files := map[string][]byte{
			filepath.Join(sysDir, PathsDir, "p.json"):    sys,
			filepath.Join(localDir, PathsDir, "p.json"):  local,
			filepath.Join(localDir, Stage1Dir, "s.json"): other,
			filepath.Join(localDir, AuthDir, "a.json"):   other,
		}
		for p, b := range files {
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		d, err := DataDir(sysDir, localDir)
		if err == nil && d != "" && !filepath.IsAbs(d) {
			t.Fatalf("data directory %q accepted", d)
		}
		Unused(sysDir, localDir)
	})
}
