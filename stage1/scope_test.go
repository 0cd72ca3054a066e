package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	systemddbus "github.com/coreos/go-systemd/v22/dbus"
)

// fakeSystemd records the scope asked for and answers with result.
type fakeSystemd struct {
	result string // job result sent on the channel; "" sends nothing
	err    error  // returned by StartTransientUnitContext
	name   string
	props  map[string]any
	closed bool
}

func (f *fakeSystemd) StartTransientUnitContext(_ context.Context, name, mode string, props []systemddbus.Property, ch chan<- string) (int, error) {
	f.name = name
	f.props = map[string]any{}
	for _, p := range props {
		f.props[p.Name] = p.Value.Value()
	}
	if f.err != nil {
		return 0, f.err
	}
	if f.result != "" {
		ch <- f.result
	}
	return 1, nil
}

func (f *fakeSystemd) Close() { f.closed = true }

func TestJoinScope(t *testing.T) {
	const uuid = "0123"
	tests := []struct {
		name    string
		fake    *fakeSystemd
		dialErr error
		wantErr string
	}{
		{name: "created", fake: &fakeSystemd{result: "done"}},
		{name: "no system bus", dialErr: errors.New("system bus not found"), wantErr: "cannot connect to systemd"},
		{name: "refused", fake: &fakeSystemd{err: errors.New("access denied")}, wantErr: "access denied"},
		{name: "job failed", fake: &fakeSystemd{result: "failed"}, wantErr: "systemd job failed"},
		{name: "no answer", fake: &fakeSystemd{}, wantErr: "no answer from systemd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			dial := func(context.Context) (scopeStarter, error) {
				if tc.dialErr != nil {
					return nil, tc.dialErr
				}
				return tc.fake, nil
			}
			err := joinScope(ctx, dial, uuid, "/kubepods.slice", "/var/lib/rkt/pods/run/0123", 4242)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if tc.fake == nil {
				return
			}
			if !tc.fake.closed {
				t.Error("the dbus connection was not closed")
			}
			if tc.fake.name != "rkt-stage1-0123.scope" {
				t.Errorf("scope name %q", tc.fake.name)
			}
			if got := tc.fake.props["Slice"]; got != "kubepods.slice" {
				t.Errorf("slice %v", got)
			}
			if pids, _ := tc.fake.props["PIDs"].([]uint32); len(pids) != 1 || pids[0] != 4242 {
				t.Errorf("PIDs %v, want [4242]", tc.fake.props["PIDs"])
			}
			if dirs, _ := tc.fake.props["RequiresMountsFor"].([]string); len(dirs) != 1 || dirs[0] != "/var/lib/rkt/pods/run/0123" {
				t.Errorf("RequiresMountsFor %v, want the pod directory", tc.fake.props["RequiresMountsFor"])
			}
		})
	}
}

// TestJoinSystemdScopeFallback: without systemd as PID 1 (this host) the
// real dbus connection fails fast with an error:
// supervisor logs it and stays where it is.
func TestJoinSystemdScopeFallback(t *testing.T) {
	if systemdRunning() {
		t.Skip("systemd is PID 1 here")
	}
	start := time.Now()
	err := joinSystemdScope("0123", "/rkt", "/var/lib/rkt/pods/run/0123")
	if err == nil {
		t.Fatal("a scope was created without systemd")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the failing connection took %s", d)
	}
	t.Logf("fallback: %v", err)
}
