package store

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, usable with errors.Is on what the store returns.
var (
	// ErrImageNotFound: no image matches the reference.
	ErrImageNotFound = errors.New("image not found")
	// ErrAmbiguousRef: an ID prefix matches several images.
	ErrAmbiguousRef = errors.New("ambiguous image reference")
	// ErrImageInUse: the image is used by a pod and removal was not forced.
	ErrImageInUse = errors.New("image is in use")
	// ErrInvalidRef: the reference cannot be parsed.
	ErrInvalidRef = errors.New("invalid image reference")
	// ErrTooManyRedirects: the registry redirected a request in a loop.
	ErrTooManyRedirects = errors.New("registry redirected too many times")
	// ErrTooLarge: a manifest or config exceeds its size limit.
	ErrTooLarge = errors.New("registry content too large")
	// ErrRegistryStalled: the registry sent nothing for the idle timeout.
	ErrRegistryStalled = errors.New("registry stopped sending")
	// ErrContentMismatch: fetched content does not match its digest, size
	// or diff ID.
	ErrContentMismatch = errors.New("content does not match its descriptor")
	// ErrNewerFormat: on-disk data written by a newer rkt, which this one
	// refuses rather than misreads.
	ErrNewerFormat = errors.New("on-disk format is newer than this rkt")
	// ErrRegistryBlocked: the configuration has no mirror of the image's
	// registry and keeps the registry itself from being contacted.
	ErrRegistryBlocked = errors.New(`registry blocked by the configuration (no mirror, "upstream": false)`)
	// ErrIndexTooDeep: an image index nests indexes deeper than an image
	// may be (maxIndexDepth).
	ErrIndexTooDeep = errors.New("image indexes nested too deep")
	// ErrNonPublicAddress: a fetch from a public registry was led (by a
	// redirect, token realm or foreign layer URL) to a loopback, private,
	// link-local or other non-public address.
	ErrNonPublicAddress = errors.New("non-public address")
)

// NotFoundError says which reference matched no image.
type NotFoundError struct{ Ref string }

// Error says which reference matched no image.
func (e *NotFoundError) Error() string { return fmt.Sprintf("image %q not found in store", e.Ref) }

// Is makes errors.Is(err, ErrImageNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrImageNotFound }

// AmbiguousError lists the images an ID prefix matches.
type AmbiguousError struct {
	Ref        string
	Candidates []string
}

// Error lists the matching images.
func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("image reference %q is ambiguous: it matches %s", e.Ref, strings.Join(e.Candidates, ", "))
}

// Is makes errors.Is(err, ErrAmbiguousRef) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguousRef }

// InUseError names the image that a pod uses.
type InUseError struct{ ID string }

// Error names the image in use.
func (e *InUseError) Error() string {
	return fmt.Sprintf("image %s is in use by a pod (use force to remove it anyway)", e.ID)
}

// Is makes errors.Is(err, ErrImageInUse) true.
func (e *InUseError) Is(target error) bool { return target == ErrImageInUse }

// NoPlatformError says that an image index has no image for the platform
// asked for, and lists the platforms it has.
type NoPlatformError struct {
	Index string   // index digest
	Want  string   // e.g. linux/amd64
	Have  []string // the platforms of the index's images
}

// Error lists the platforms of the index.
func (e *NoPlatformError) Error() string {
	return fmt.Sprintf("image index %s has no image for platform %s (it has: %s)", e.Index, e.Want, strings.Join(e.Have, ", "))
}

// Is makes errors.Is(err, ErrImageNotFound) true, as containerd reports
// a missing platform.
func (e *NoPlatformError) Is(target error) bool { return target == ErrImageNotFound }
