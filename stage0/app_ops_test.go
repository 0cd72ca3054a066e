package stage0

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rkt/rkt/stage1/control"
)

func TestAppErrMapping(t *testing.T) {
	for in, want := range map[error]error{
		control.ErrAppNotFound:   ErrAppNotFound,
		control.ErrInvalid:       ErrInvalid,
		control.ErrNoSupervisor:  ErrNotRunning,
		control.ErrAppNotRunning: ErrNotRunning,
		control.ErrAppRunning:    ErrInvalidState,
	} {
		got := appErr(fmt.Errorf("stage1 said: %w", in))
		if !errors.Is(got, want) || !errors.Is(got, in) {
			t.Errorf("appErr(%v) = %v; want it to match %v and keep the cause", in, got, want)
		}
	}
	if appErr(nil) != nil {
		t.Error("appErr(nil) != nil")
	}
}
