package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rkt/rkt/pkg/fileperm"
)

// digestOf returns "sha256:<hex>" of b.
func digestOf(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// digestHex validates a "sha256:<64 hex>" digest and returns its hex part.
func digestHex(d string) (string, error) {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return "", fmt.Errorf("unsupported digest %q: want sha256:<64 hex digits>", d)
	}
	if _, err := hex.DecodeString(h); err != nil || strings.ToLower(h) != h {
		return "", fmt.Errorf("invalid digest %q", d)
	}
	return h, nil
}

// hasBlob reports whether the blob is in the store. A blob is visible only
// once complete and verified (rename after fsync).
func (s *Store) hasBlob(digest string) bool {
	h, err := digestHex(digest)
	if err != nil {
		return false
	}
	_, err = os.Lstat(s.blobPath(h))
	return err == nil
}

// OpenBlob opens a blob of the store by digest.
func (s *Store) OpenBlob(digest string) (*os.File, error) {
	h, err := digestHex(digest)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(s.blobPath(h))
	if err != nil {
		return nil, fmt.Errorf("cannot open blob %s: %w", digest, err)
	}
	return f, nil
}

// ReadBlob returns the content of a (small) blob of the store.
func (s *Store) ReadBlob(digest string) ([]byte, error) {
	f, err := s.OpenBlob(digest)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// putBlob streams r into the store. When want is not empty the content must
// have that digest; when size >= 0 it must have that many bytes (a longer
// stream is refused without reading past size+1). onRead is called with the
// bytes read so far. It returns the digest and size of what was stored.
func (s *Store) putBlob(r io.Reader, want string, size int64, onRead func(int64)) (string, int64, error) {
	return s.putBlobChecked(r, want, size, onRead, nil)
}

// putBlobChecked is putBlob that also calls check, if not nil, once the
// content is read and verified, and stores the blob only if it succeeds.
func (s *Store) putBlobChecked(r io.Reader, want string, size int64, onRead func(int64), check func() error) (string, int64, error) {
	if want != "" && s.hasBlob(want) {
		return want, size, nil
	}
	tmp, err := s.newTempFile("blob")
	if err != nil {
		return "", 0, err
	}
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	if size >= 0 {
		r = io.LimitReader(r, size+1)
	}
	cr := &countingReader{r: r, onRead: onRead}
	n, err := io.Copy(io.MultiWriter(tmp, h), cr)
	if err != nil {
		return "", 0, fmt.Errorf("cannot download blob %s: %w", want, err)
	}
	if size >= 0 && n != size {
		return "", 0, fmt.Errorf("blob %s has %d bytes, its descriptor says %d: %w", want, n, size, ErrContentMismatch)
	}
	got := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if want != "" && got != want {
		return "", 0, fmt.Errorf("blob digest mismatch: expected %s, got %s: %w", want, got, ErrContentMismatch)
	}
	if check != nil {
		if err := check(); err != nil {
			return "", 0, err
		}
	}
	if err := tmp.Sync(); err != nil {
		return "", 0, fmt.Errorf("cannot sync blob: %w", err)
	}
	if err := fileperm.SetFile(tmp, fileperm.Shared); err != nil {
		return "", 0, err
	}
	if err := os.Rename(tmp.Name(), s.blobPath(strings.TrimPrefix(got, "sha256:"))); err != nil {
		return "", 0, fmt.Errorf("cannot store blob %s: %w", got, err)
	}
	tmp.Close()
	tmp = nil
	// The rename must be durable before the database records the blob.
	if err := fileperm.SyncDir(filepath.Join(s.dir, blobsDir)); err != nil {
		return "", 0, err
	}
	return got, n, nil
}

// putBlobBytes stores b, verifying it against want if given, and records
// it in w if it was not in the store.
func (s *Store) putBlobBytes(b []byte, want string, w *written) (string, error) {
	had := s.hasBlob(digestOf(b))
	d, _, err := s.putBlob(strings.NewReader(string(b)), want, int64(len(b)), nil)
	if err == nil && !had {
		w.addBlob(d)
	}
	return d, err
}

type countingReader struct {
	r      io.Reader
	n      int64
	onRead func(int64)
}

// Read counts and reports the bytes read.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.onRead != nil && n > 0 {
		c.onRead(c.n)
	}
	return n, err
}
