package appuser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLookup: an image's /etc/passwd and /etc/group are hostile. Whatever
// they hold, Lookup returns a user or an error without panicking, and the
// user's ids fit the kernel's (no -1, no wrap past 2^32-1 as 4294967295 is
// the kernel's "no id") and its home holds no NUL byte.
func FuzzLookup(f *testing.F) {
	f.Add("root:x:0:0:root:/root:/bin/sh\nwww:x:33:33::/var/www:/bin/false\n", "root:x:0:\nextra:x:50:www\n", "www")
	f.Add("a:x:4294967295:0::/:\n", "g:x:-1:a,a,a\n", "a:g")
	f.Add("::::::\n\x00:x:1:1::/:\n", ":x::\n", "1:1")
	f.Add("root:x:0:0:root:/root:/bin/sh\n", "", "root:nosuch")
	f.Add("alice:::::\x00", "", "alice")
	f.Fuzz(func(t *testing.T, passwd, group, spec string) {
		root := t.TempDir()
		etc := filepath.Join(root, "etc")
		if err := os.MkdirAll(etc, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(etc, "passwd"), []byte(passwd), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(etc, "group"), []byte(group), 0o600); err != nil {
			t.Fatal(err)
		}
		u, err := Lookup(root, spec)
		if err != nil {
			return
		}
		for _, id := range append([]int{u.Uid, u.Gid}, u.Sgids...) {
			if id < 0 || id >= 1<<32-1 {
				t.Fatalf("Lookup(%q) = uid %d gid %d groups %v: an id out of the kernel's range", spec, u.Uid, u.Gid, u.Sgids)
			}
		}
		if strings.ContainsRune(u.Home, 0) {
			t.Fatalf("Lookup(%q): home %q holds a NUL byte, which HOME cannot carry", spec, u.Home)
		}
	})
}
