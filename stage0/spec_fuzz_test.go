package stage0

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// FuzzImageSpec builds an app's runtime spec from an arbitrary image
// config (JSON, as a registry serves it) and the image's /etc/passwd and
// /etc/group: buildSpec never panics, and a spec it accepts is one
// libcontainer can start: a command, an absolute working directory,
// well-formed environment entries, no NUL byte in what execve takes, and
// real user and group IDs (not the kernel's "no change" 2^32-1).
func FuzzImageSpec(f *testing.F) {
	f.Add([]byte(`{"Entrypoint":["/ep"],"Cmd":["c"],"Env":["PATH=/bin","JUNK","=x"],"WorkingDir":"/w","User":"www-data"}`),
		[]byte("root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33:www:/var/www:/bin/false\n"), []byte("root:x:0:\nwww-data:x:33:\n"))
	f.Add([]byte(`{"Cmd":["/x"],"User":"4294967295:4294967295","WorkingDir":"rel"}`), []byte(""), []byte(""))
	f.Add([]byte(`{"Cmd":["/x"],"User":"alice:staff"}`),
		[]byte("alice:x:1000:1000::/home/alice:/bin/sh\n"), []byte("staff:x:50:alice\nvideo:x:-1:alice\n"))
	f.Add([]byte(`{"Cmd":[""],"Env":["A=\u0000"],"User":":"}`), []byte("::::::\n"), []byte(":::\n"))
	f.Fuzz(func(t *testing.T, config, passwd, group []byte) {
		var cfg v1.Config
		if err := json.Unmarshal(config, &cfg); err != nil {
			return
		}
		in := testInput(t, AppOptions{}, cfg)
		for name, b := range map[string][]byte{"passwd": passwd, "group": group} {
			if err := os.WriteFile(filepath.Join(in.rootfs, "etc", name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s, err := buildSpec(in)
		if err != nil {
			return
		}
		p := s.Process
		if len(p.Args) == 0 {
			t.Errorf("accepted a spec with no command: %q", p.Args)
		}
		for _, v := range append(append([]string{p.Cwd}, p.Args...), p.Env...) {
			if strings.IndexByte(v, 0) >= 0 {
				t.Errorf("%q holds a NUL byte, which execve cannot take", v)
			}
		}
		if !filepath.IsAbs(p.Cwd) {
			t.Errorf("working directory %q is not absolute", p.Cwd)
		}
		for _, kv := range p.Env {
			if i := strings.IndexByte(kv, '='); i <= 0 {
				t.Errorf("env entry %q has no name", kv)
			}
		}
		const noChange = 1<<32 - 1
		ids := append([]uint32{p.User.UID, p.User.GID}, p.User.AdditionalGids...)
		for _, id := range ids {
			if id == noChange {
				t.Errorf("user %+v holds the id %d (user %q)", p.User, id, cfg.User)
			}
		}
	})
}
