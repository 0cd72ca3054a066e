package tarx

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
)

// Validate reads a whole uncompressed tar stream and returns the first
// error that Extract would find in its headers (a corrupt or truncated
// stream, or what CheckHeader refuses), writing nothing.
func Validate(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("corrupt tar stream: %w", err)
		}
		if err := CheckHeader(h); err != nil {
			return err
		}
	}
}

// CheckHeader returns the error Extract gives for the header h alone: a
// sparse entry, a name that leaves the destination, a hard link whose
// target leaves it or is the destination itself. Every reader of image
// tars (layers, ACIs, OCI archives) applies it to each entry.
func CheckHeader(h *tar.Header) error {
	if IsSparse(h) {
		return fmt.Errorf("%q: %w", h.Name, ErrSparse)
	}
	if _, err := cleanName(h.Name); err != nil {
		return err
	}
	if h.Typeflag != tar.TypeLink {
		return nil
	}
	ln, err := cleanName(h.Linkname)
	if err != nil {
		return fmt.Errorf("hard link %q: %w", h.Name, err)
	}
	if ln == "" {
		return fmt.Errorf("%w: hard link %q to the root", ErrUnsafePath, h.Name)
	}
	return nil
}
