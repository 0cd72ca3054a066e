package testutil

import (
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BusyboxPath is Debian's busybox-static binary the base layer is made of.
const BusyboxPath = "/bin/busybox"

// ImageConfig is the part of an OCI image config tests set.
type ImageConfig struct {
	Entrypoint   []string
	Cmd          []string
	Env          []string // default: PATH only
	User         string
	WorkingDir   string
	Labels       map[string]string
	ExposedPorts []string // "80/tcp"
	Volumes      []string
	OS           string // default linux
	Architecture string // default runtime.GOARCH
	// Docker selects Docker schema 2 media types (manifest, config) instead
	// of OCI ones; give it layers from DockerLayer for a pure Docker image.
	Docker bool
}

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

var (
	busyboxOnce  sync.Once
	busyboxTar   []byte
	busyboxErr   error
	busyboxNames []string
	busyboxMu    sync.Mutex
)

// BusyboxEntries returns the tar entries of the base layer: the FHS
// directories, /bin/busybox with every applet as a hard link in /bin, and
// /etc/passwd and /etc/group like the busybox image's.
func BusyboxEntries(t testing.TB) []Entry {
	t.Helper()
	body, err := os.ReadFile(BusyboxPath)
	if err != nil {
		t.Fatalf("busybox-static is needed for test images (apt-get install busybox-static): %v", err)
	}
	names := busyboxApplets(t)
	entries := []Entry{Dir("bin"), Dir("dev"), Dir("etc"), Dir("home"), Dir("proc"), Dir("root"),
		Dir("sys"), {Name: "tmp", Type: '5', Mode: 0o1777}, Dir("usr"), Dir("var"), Dir("var/www")}
	entries = append(entries, Entry{Name: "bin/busybox", Mode: 0o755, Body: body})
	for _, n := range names {
		if n != "busybox" {
			// the mode of a hard link's header is the file's (containerd applies it)
			l := Hardlink("bin/"+n, "bin/busybox")
			l.Mode = 0o755
			entries = append(entries, l)
		}
	}
	entries = append(entries,
		File("etc/passwd", "root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1:daemon:/usr/sbin:/bin/false\n"+
			"bin:x:2:2:bin:/bin:/bin/false\nsys:x:3:3:sys:/dev:/bin/false\nsync:x:4:100:sync:/bin:/bin/sync\n"+
			"mail:x:8:8:mail:/var/spool/mail:/bin/false\nwww-data:x:33:33:www-data:/var/www:/bin/false\n"+
			"operator:x:37:37:Operator:/var:/bin/false\nnobody:x:65534:65534:nobody:/home:/bin/false\n"),
		File("etc/group", "root:x:0:\ndaemon:x:1:\nbin:x:2:\nsys:x:3:\nadm:x:4:\ntty:x:5:\ndisk:x:6:\n"+
			"wheel:x:10:root\nmail:x:12:\nwww-data:x:33:\nusers:x:100:\nnogroup:x:65534:\n"),
	)
	return entries
}

func busyboxApplets(t testing.TB) []string {
	busyboxOnce.Do(func() {
		out, err := exec.Command(BusyboxPath, "--list").Output()
		if err != nil {
			busyboxErr = err
			return
		}
		busyboxNames = strings.Fields(string(out))
		sort.Strings(busyboxNames)
	})
	if busyboxErr != nil {
		t.Fatalf("cannot list busybox applets: %v", busyboxErr)
	}
	return busyboxNames
}

// BusyboxTar returns the base layer as an uncompressed tar (cached).
func BusyboxTar(t testing.TB) []byte {
	t.Helper()
	entries := BusyboxEntries(t)
	busyboxMu.Lock()
	defer busyboxMu.Unlock()
	if busyboxTar == nil {
		b, err := TarBytes(entries...)
		if err != nil {
			t.Fatalf("cannot write busybox layer: %v", err)
		}
		busyboxTar = b
	}
	return busyboxTar
}

// BusyboxLayer is the base layer (see BusyboxEntries) as an OCI gzip layer.
func BusyboxLayer(t testing.TB) v1.Layer {
	t.Helper()
	return LayerFromTar(t, BusyboxTar(t))
}

// Busybox is the base image: the busybox layer, Cmd ["sh"], PATH set.
func Busybox(t testing.TB) v1.Image {
	t.Helper()
	return Image(t, ImageConfig{Cmd: []string{"sh"}}, BusyboxLayer(t))
}

// BusyboxWith is the busybox layer, then extra layers, with cfg (Cmd
// defaults to ["sh"]).
func BusyboxWith(t testing.TB, cfg ImageConfig, extra ...v1.Layer) v1.Image {
	t.Helper()
	if cfg.Cmd == nil && cfg.Entrypoint == nil {
		cfg.Cmd = []string{"sh"}
	}
	return Image(t, cfg, append([]v1.Layer{BusyboxLayer(t)}, extra...)...)
}

// Image builds a deterministic OCI image (OCI media types, fixed creation
// time) from layers, lowest first.
func Image(t testing.TB, cfg ImageConfig, layers ...v1.Layer) v1.Image {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if cfg.Docker {
		img = mutate.MediaType(empty.Image, types.DockerManifestSchema2)
		img = mutate.ConfigMediaType(img, types.DockerConfigJSON)
	}
	img, err := mutate.AppendLayers(img, layers...)
	if err != nil {
		t.Fatalf("cannot append layers: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("cannot read config: %v", err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: Epoch}
	cf.OS, cf.Architecture = cfg.OS, cfg.Architecture
	if cf.OS == "" {
		cf.OS = "linux"
	}
	if cf.Architecture == "" {
		cf.Architecture = runtime.GOARCH
	}
	c := v1.Config{Entrypoint: cfg.Entrypoint, Cmd: cfg.Cmd, Env: cfg.Env, User: cfg.User,
		WorkingDir: cfg.WorkingDir, Labels: cfg.Labels}
	if c.Env == nil {
		c.Env = []string{defaultPath}
	}
	if len(cfg.ExposedPorts) > 0 {
		c.ExposedPorts = map[string]struct{}{}
		for _, p := range cfg.ExposedPorts {
			c.ExposedPorts[p] = struct{}{}
		}
	}
	if len(cfg.Volumes) > 0 {
		c.Volumes = map[string]struct{}{}
		for _, v := range cfg.Volumes {
			c.Volumes[v] = struct{}{}
		}
	}
	cf.Config = c
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatalf("cannot set config: %v", err)
	}
	return img
}

// PlatformImage is one entry of a multi-platform index.
type PlatformImage struct {
	OS, Architecture, Variant string
	Image                     v1.Image
}

// DockerIndex builds a Docker manifest list of the given per-platform images.
func DockerIndex(t testing.TB, imgs ...PlatformImage) v1.ImageIndex {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.DockerManifestList)
	for _, pi := range imgs {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: pi.Image,
			Descriptor: v1.Descriptor{
				MediaType: types.DockerManifestSchema2,
				Platform:  &v1.Platform{OS: pi.OS, Architecture: pi.Architecture, Variant: pi.Variant},
			},
		})
	}
	return idx
}

// Index builds an OCI image index of the given per-platform images.
func Index(t testing.TB, imgs ...PlatformImage) v1.ImageIndex {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, pi := range imgs {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: pi.Image,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: pi.OS, Architecture: pi.Architecture, Variant: pi.Variant},
			},
		})
	}
	return idx
}

// ImageID returns the image's ID as rkt reports it: sha256:<config digest>.
func ImageID(t testing.TB, img v1.Image) string {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatalf("cannot compute image ID: %v", err)
	}
	return h.String()
}

// ManifestDigest returns the image's manifest digest (its repo digest).
func ManifestDigest(t testing.TB, img interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	h, err := img.Digest()
	if err != nil {
		t.Fatalf("cannot compute manifest digest: %v", err)
	}
	return h.String()
}
