package tarx

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
)

// Validate reads a whole uncompressed tar stream and returns the first
// error that Extract would find in its headers (a corrupt or truncated
// stream, a sparse entry, a name leaving the destination), writing nothing.
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
		if IsSparse(h) {
			return fmt.Errorf("%q: %w", h.Name, ErrSparse)
		}
		if _, err := cleanName(h.Name); err != nil {
			return err
		}
	}
}
