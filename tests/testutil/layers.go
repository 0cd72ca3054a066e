package testutil

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"math/rand"
	"path"
	"strconv"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Epoch is the timestamp of every entry and image the builders make, so
// that image IDs are stable across runs.
var Epoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// Entry is one tar entry of a test layer. Zero values mean: a regular file,
// mode 0644 (0755 for directories), owner 0:0, size len(Body).
type Entry struct {
	Name     string // path inside the layer, e.g. "etc/motd"
	Type     byte   // tar.TypeReg, TypeDir, TypeSymlink, TypeLink, TypeChar, ...
	Mode     int64
	Body     []byte
	Linkname string
	UID, GID int
	Size     int64 // header size when not len(Body) (hostile layers)
	Devmajor int64
	Devminor int64
	Xattrs   map[string]string // stored as PAX SCHILY.xattr records
	ModTime  time.Time         // default Epoch
}

// File is a regular file entry.
func File(name, body string) Entry { return Entry{Name: name, Body: []byte(body)} }

// Dir is a directory entry.
func Dir(name string) Entry { return Entry{Name: name, Type: tar.TypeDir} }

// Symlink is a symbolic link entry.
func Symlink(name, target string) Entry {
	return Entry{Name: name, Type: tar.TypeSymlink, Linkname: target, Mode: 0o777}
}

// Hardlink is a hard link entry to target (a path inside the layer).
func Hardlink(name, target string) Entry {
	return Entry{Name: name, Type: tar.TypeLink, Linkname: target}
}

// Whiteout deletes p from the layers below (OCI .wh. form).
func Whiteout(p string) Entry {
	return Entry{Name: path.Join(path.Dir(p), ".wh."+path.Base(p))}
}

// OpaqueWhiteout hides every lower entry of dir (OCI .wh..wh..opq form).
func OpaqueWhiteout(dir string) Entry { return Entry{Name: path.Join(dir, ".wh..wh..opq")} }

// TarBytes writes entries, in order, as an uncompressed tar.
func TarBytes(entries ...Entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.Name, Typeflag: e.Type, Mode: e.Mode, Linkname: e.Linkname,
			Uid: e.UID, Gid: e.GID, ModTime: Epoch, Format: tar.FormatPAX,
			Devmajor: e.Devmajor, Devminor: e.Devminor,
		}
		if !e.ModTime.IsZero() {
			h.ModTime = e.ModTime
		}
		for k, v := range e.Xattrs {
			if h.PAXRecords == nil {
				h.PAXRecords = map[string]string{}
			}
			h.PAXRecords["SCHILY.xattr."+k] = v
		}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.Body))
			if e.Size != 0 {
				h.Size = e.Size
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if len(e.Body) > 0 {
			if _, err := tw.Write(e.Body); err != nil && err != tar.ErrWriteTooLong {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Gzip compresses b deterministically (no name, no mtime in the header).
func Gzip(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// LayerFromTar makes an OCI gzip layer from uncompressed tar bytes.
func LayerFromTar(t testing.TB, tarBytes []byte) v1.Layer {
	t.Helper()
	gz := Gzip(tarBytes)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatalf("cannot make layer: %v", err)
	}
	return l
}

// DockerLayer makes a Docker (application/vnd.docker.image.rootfs.diff.tar.gzip)
// layer holding entries.
func DockerLayer(t testing.TB, entries ...Entry) v1.Layer {
	t.Helper()
	b, err := TarBytes(entries...)
	if err != nil {
		t.Fatalf("cannot write layer tar: %v", err)
	}
	gz := Gzip(b)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	}, tarball.WithMediaType(types.DockerLayer))
	if err != nil {
		t.Fatalf("cannot make layer: %v", err)
	}
	return l
}

// Layer makes an OCI gzip layer holding entries.
func Layer(t testing.TB, entries ...Entry) v1.Layer {
	t.Helper()
	b, err := TarBytes(entries...)
	if err != nil {
		t.Fatalf("cannot write layer tar: %v", err)
	}
	return LayerFromTar(t, b)
}

// RandomLayer makes a layer of `files` regular files under dir with size
// bytes in total of incompressible pseudo-random content from seed.
func RandomLayer(t testing.TB, seed int64, dir string, files int, size int) v1.Layer {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	entries := []Entry{Dir(dir)}
	per := size / files
	for i := 0; i < files; i++ {
		body := make([]byte, per)
		r.Read(body)
		entries = append(entries, Entry{Name: path.Join(dir, "f"+strconv.Itoa(i)), Body: body})
	}
	return Layer(t, entries...)
}
