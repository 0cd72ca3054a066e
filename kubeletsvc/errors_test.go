package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/stage1/control"
	"github.com/rkt/rkt/store"
)

func TestToStatus(t *testing.T) {
	tests := []struct {
		err  error
		code codes.Code
	}{
		{notFoundf("sandbox %q", "x"), codes.NotFound},
		{fmt.Errorf("cannot create: %w", invalidf("bad")), codes.InvalidArgument},
		{fmt.Errorf("exec: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{fmt.Errorf("peer: %w", errPermission), codes.PermissionDenied},
		{status.Error(codes.Aborted, "x"), codes.Aborted},
		{errors.New("boom"), codes.Unknown},
		{fmt.Errorf("cannot record app: %w", &fs.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}), codes.ResourceExhausted},
		{fmt.Errorf("stage1 start \"a\": open log: no space left on device (%w)", syscall.ENOSPC), codes.ResourceExhausted},
		{fmt.Errorf("cannot create directory: %w", &fs.PathError{Op: "mkdir", Path: "/x", Err: syscall.EROFS}), codes.FailedPrecondition},
		{fmt.Errorf("%w: %w", stage0.ErrInvalid, fmt.Errorf("libcontainer refuses: %w", control.ErrInvalid)), codes.InvalidArgument},
		{fmt.Errorf("exec: %w", syscall.E2BIG), codes.InvalidArgument},
		{fmt.Errorf("cannot fetch invalid.example/x:1: invalid.example: %w", store.ErrRegistryBlocked), codes.FailedPrecondition},
		{fmt.Errorf("cannot fetch invalid.example/x:1: invalid.example: %w", store.ErrIndexTooDeep), codes.FailedPrecondition},
	}
	for _, tc := range tests {
		st, _ := status.FromError(toStatus(tc.err))
		if st.Code() != tc.code {
			t.Errorf("toStatus(%v) code = %v, want %v", tc.err, st.Code(), tc.code)
		}
		if st.Message() != tc.err.Error() && status.Code(tc.err) == codes.Unknown {
			t.Errorf("toStatus(%v) message %q lost the cause chain", tc.err, st.Message())
		}
	}
	if toStatus(nil) != nil {
		t.Error("toStatus(nil) != nil")
	}
}
