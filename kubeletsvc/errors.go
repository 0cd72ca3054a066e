package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rkt/rkt/pkg/appuser"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// Sentinel errors of the service; handlers wrap them with context and the
// error mapping turns them into gRPC codes.
var (
	errNotFound           = errors.New("not found")
	errAlreadyExists      = errors.New("already exists")
	errInvalidArgument    = errors.New("invalid argument")
	errFailedPrecondition = errors.New("failed precondition")
)

// codeSentinels maps sentinel errors (errors.Is) of this package, stage0,
// the store and the system to gRPC codes; the first match wins. System
// errors cross from stage1 too (control.Response.Errno).
var codeSentinels = []struct {
	err  error
	code codes.Code
}{
	{errPermission, codes.PermissionDenied},
	{errNotFound, codes.NotFound},
	{errAlreadyExists, codes.AlreadyExists},
	{errInvalidArgument, codes.InvalidArgument},
	{errFailedPrecondition, codes.FailedPrecondition},
	{context.DeadlineExceeded, codes.DeadlineExceeded},
	{context.Canceled, codes.Canceled},
	{fs.ErrPermission, codes.PermissionDenied},
	{store.ErrImageNotFound, codes.NotFound},
	{store.ErrAmbiguousRef, codes.InvalidArgument},
	{store.ErrInvalidRef, codes.InvalidArgument},
	{store.ErrImageInUse, codes.FailedPrecondition},
	{store.ErrTooManyRedirects, codes.FailedPrecondition}, // the registry, not the request, is at fault
	{store.ErrTooLarge, codes.FailedPrecondition},
	{store.ErrIndexTooDeep, codes.FailedPrecondition},
	{store.ErrContentMismatch, codes.FailedPrecondition},
	{store.ErrNonPublicAddress, codes.FailedPrecondition},
	{store.ErrRegistryStalled, codes.Unavailable}, // worth a retry
	{store.ErrNewerFormat, codes.FailedPrecondition},
	{store.ErrRegistryBlocked, codes.FailedPrecondition}, // the node's configuration refuses it
	{schema.ErrNewerVersion, codes.FailedPrecondition},
	{appuser.ErrIDRange, codes.FailedPrecondition}, // the image's /etc/passwd or /etc/group
	{appuser.ErrTooLarge, codes.FailedPrecondition},
	{stage0.ErrPodNotFound, codes.NotFound},
	{stage0.ErrAppNotFound, codes.NotFound},
	{stage0.ErrAmbiguousUUID, codes.InvalidArgument},
	{stage0.ErrAppExists, codes.AlreadyExists},
	{stage0.ErrExists, codes.AlreadyExists},
	{stage0.ErrNotRunning, codes.FailedPrecondition},
	{stage0.ErrInvalidState, codes.FailedPrecondition},
	{stage0.ErrInvalid, codes.InvalidArgument},
	{stage0.ErrCheckpointUnsupported, codes.FailedPrecondition},
	{syscall.ENOSPC, codes.ResourceExhausted},
	{syscall.EDQUOT, codes.ResourceExhausted},
	{syscall.ENOMEM, codes.ResourceExhausted},
	{syscall.EMFILE, codes.ResourceExhausted},
	{syscall.ENFILE, codes.ResourceExhausted},
	{syscall.EROFS, codes.FailedPrecondition},     // the data dir's filesystem turned read-only (a disk error)
	{syscall.E2BIG, codes.InvalidArgument},        // exec arguments and environment over ARG_MAX
	{syscall.ENAMETOOLONG, codes.InvalidArgument}, // a path of the request
}

// toStatus turns a handler error into a gRPC status error carrying the
// whole cause chain. An error that already is a status keeps its code.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codeOf(err), err.Error())
}

// codeOf returns the gRPC code for err; Unknown when nothing matches.
func codeOf(err error) codes.Code {
	for _, s := range codeSentinels {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return codes.Unknown
}

// invalidf returns an InvalidArgument error.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalidArgument, fmt.Sprintf(format, args...))
}

// notFoundf returns a NotFound error.
func notFoundf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotFound, fmt.Sprintf(format, args...))
}

// internalStatus returns an Internal status error for err.
func internalStatus(err error) error {
	return status.Error(codes.Internal, err.Error())
}
