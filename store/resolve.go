package store

import (
	"encoding/hex"
	"sort"
	"strings"
	"time"
)

// ResolveImage finds an image by ID ("sha256:<hex>"), unique ID prefix
// (hex, with or without "sha256:"), name ("busybox", "name:tag") or
// name@digest. It returns an error matching ErrImageNotFound or
// ErrAmbiguousRef when nothing or more than one image matches.
func (s *Store) ResolveImage(ref string) (*Image, error) {
	img, _, err := s.ResolveImageForUse(ref)
	return img, err
}

// ResolveImageForUse is ResolveImage for a pod about to use the image; it
// also reports whether MarkUsed has a use to record, from the same
// transaction (the index is opened once, not twice, per container).
func (s *Store) ResolveImageForUse(ref string) (*Image, bool, error) {
	var rec *imageRecord
	err := s.readIndex(func(x indexReader) error {
		var err error
		rec, err = resolve(x, ref)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	img, err := rec.image()
	if err != nil {
		return nil, false, err
	}
	return img, !rec.usedRecently(), nil
}

func isHexPrefix(s string) bool {
	if s == "" || len(s) > 64 || strings.ToLower(s) != s {
		return false
	}
	if len(s)%2 == 1 {
		s += "0"
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func resolve(tx indexReader, ref string) (*imageRecord, error) {
	ref = strings.TrimSpace(ref)
	if p, ok := strings.CutPrefix(ref, "sha256:"); ok {
		if !isHexPrefix(p) {
			return nil, &NotFoundError{Ref: ref}
		}
		rec, err := resolveID(tx, ref, ref)
		if err == nil && rec == nil {
			err = &NotFoundError{Ref: ref}
		}
		return rec, err
	}
	if isHexPrefix(ref) {
		// A name wins over an ID prefix, as in containerd and Docker: a
		// pod spec's "cafe" is docker.io/library/cafe, whatever image
		// IDs start so.
		if rec, err := resolveName(tx, ref); err != nil || rec != nil {
			return rec, err
		}
		if rec, err := resolveID(tx, ref, "sha256:"+ref); err != nil || rec != nil {
			return rec, err
		}
		return nil, &NotFoundError{Ref: ref}
	}
	rec, err := resolveName(tx, ref)
	if err == nil && rec == nil {
		err = &NotFoundError{Ref: ref}
	}
	return rec, err
}

// resolveName finds the image a name:tag or name@digest reference points
// at; nil if none (or ref is no reference).
func resolveName(tx indexReader, ref string) (*imageRecord, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return nil, nil
	}
	key := r.String()
	if r.Digest != "" {
		key = r.DigestRef(r.Digest)
	}
	id := tx.getRef(key)
	if id == "" {
		return nil, nil
	}
	return tx.getImage(id)
}

// resolveID finds the one image whose ID starts with prefix; nil if none.
func resolveID(tx indexReader, ref, prefix string) (*imageRecord, error) {
	ids := tx.idsWithPrefix(prefix)
	switch len(ids) {
	case 0:
		return nil, nil
	case 1:
		return tx.getImage(ids[0])
	}
	return nil, &AmbiguousError{Ref: ref, Candidates: ids}
}

// ListImages returns every image of the store, oldest import first.
func (s *Store) ListImages() ([]*Image, error) {
	var recs []*imageRecord
	if err := s.readIndex(func(x indexReader) error {
		var err error
		recs, err = x.allImages()
		return err
	}); err != nil {
		return nil, err
	}
	out := make([]*Image, 0, len(recs))
	for _, r := range recs {
		img, err := r.image()
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ImportedAt.Before(out[j].ImportedAt) })
	return out, nil
}

// markUsedStep is how old LastUsedAt must be for MarkUsed to update it: a
// write (two fdatasyncs) per container start is not worth a finer time for
// GC grace periods counted in hours.
const markUsedStep = time.Minute

// usedRecently reports whether the image's last use is recorded to within
// markUsedStep; an image never used yet has its first use to record.
func (r *imageRecord) usedRecently() bool {
	return r.LastUsedAt.After(r.ImportedAt) && time.Since(r.LastUsedAt) < markUsedStep
}

// MarkUsed records that a pod uses the image now (for GC's grace period),
// to within markUsedStep once it has been used.
func (s *Store) MarkUsed(id string) error {
	fresh := false
	if err := s.view(func(tx *txn) error {
		rec, err := tx.getImage(id)
		if err != nil {
			return err
		}
		if rec == nil {
			return &NotFoundError{Ref: id}
		}
		fresh = rec.usedRecently()
		return nil
	}); err != nil || fresh {
		return err
	}
	return s.update(func(tx *txn) error {
		rec, err := tx.getImage(id)
		if err != nil {
			return err
		}
		if rec == nil {
			return &NotFoundError{Ref: id}
		}
		rec.LastUsedAt = time.Now().UTC()
		return tx.putImage(rec)
	})
}
