package stage0

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
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

// TestPrestartDroppedAfterCancel: an AddApp whose context ends after it
// sent a prestart, and whose commit fails, still has the supervisor drop
// the prestarted container (which it used to keep until the pod went).
func TestPrestartDroppedAfterCancel(t *testing.T) {
	rt := newTestRuntime(t)
	p, l := fakeSupervisorPod(t, rt)
	// A supervisor that answers a prestart after 300ms, the rest at once.
	ops := make(chan string, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var req control.Request
				if err := control.ReadMessage(bufio.NewReader(c), &req); err != nil {
					return
				}
				ops <- req.Op + " " + req.App
				if req.Op == control.OpPrestart {
					time.Sleep(300 * time.Millisecond)
				}
				c.Write([]byte("{}\n"))
			}()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	pre := rt.sendPrestart(ctx, p, &schema.App{Name: "web"})
	if pre == nil {
		t.Fatal("the prestart was not sent")
	}
	if op := <-ops; op != "prestart web" {
		t.Fatalf("first request %q", op)
	}
	cancel() // the caller gives up while the supervisor answers
	rt.settlePrestart(ctx, p, "web", pre, false)
	select {
	case op := <-ops:
		if op != "remove web" {
			t.Errorf("then %q, want remove web", op)
		}
	case <-time.After(2 * time.Second):
		t.Error("the prestarted container of an app not added was not dropped")
	}
}
