package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"syscall"
	"time"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
)

// StatusPath returns the path of an app's status file.
func StatusPath(podDir, app string) string {
	return schema.PodDir(podDir).App(app).Status()
}

// ReadAppStatus reads an app's status file. An app that has never been
// started has none: the error then satisfies errors.Is(err, fs.ErrNotExist).
func ReadAppStatus(podDir, app string) (*schema.AppStatus, error) {
	b, err := os.ReadFile(StatusPath(podDir, app))
	if err != nil {
		return nil, fmt.Errorf("cannot read status of app %q: %w", app, err)
	}
	var st schema.AppStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("cannot parse status of app %q: %w", app, err)
	}
	return &st, nil
}

// ReadPodStatus reads the status files of every app directory of the pod,
// sorted by app name. Apps without a status file are skipped.
func ReadPodStatus(podDir string) ([]schema.AppStatus, error) {
	ents, err := os.ReadDir(schema.PodDir(podDir).AppsDir())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot list apps of pod %q: %w", podDir, err)
	}
	var out []schema.AppStatus
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		st, err := ReadAppStatus(podDir, e.Name())
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// WriteAppStatus writes an app's status file atomically (temp file,
// rename), durably (fsync) unless the app is running: that means nothing
// after a reboot, and an app's start waits for it. stage1 is its only
// writer while it runs.
func WriteAppStatus(podDir string, st *schema.AppStatus) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode status of app %q: %w", st.Name, err)
	}
	if st.State == schema.AppRunning {
		return fileperm.WriteFileVolatile(StatusPath(podDir, st.Name), b, fileperm.Shared)
	}
	return fileperm.WriteFile(StatusPath(podDir, st.Name), b, fileperm.Shared)
}

// Status of the apps of a supervisor that died (SIGKILL, OOM kill, crash).
const (
	ReasonSupervisorDied  = "SupervisorDied"
	MessageSupervisorDied = "the stage1 supervisor of the pod died"
)

// NoteSupervisorDeath returns when the supervisor of podDir was first
// found dead: the mtime of its schema.PodDir.Stage1Died file, which the first to find
// it dead creates (the stage0 that started it, as it reaps it, or any
// later reader), so that every status reports the same time. Call it only
// once the supervisor is gone. When the file can be neither read nor
// created (an unprivileged reader) it returns now and an error.
func NoteSupervisorDeath(podDir string) (time.Time, error) {
	path := schema.PodDir(podDir).Stage1Died()
	f, err := fileperm.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fileperm.Shared)
	if err == nil {
		f.Close()
	}
	fi, serr := os.Stat(path)
	if serr != nil {
		if err == nil {
			err = serr
		}
		return time.Now(), fmt.Errorf("cannot record the death of the supervisor of pod %q: %w", podDir, err)
	}
	return fi.ModTime(), nil
}

// MarkSupervisorDead records the apps of podDir still recorded as running
// as killed with their supervisor at time at: exit code 137, SIGKILL,
// Reason SupervisorDied. Only the holder of the pod lock may call it, once
// the supervisor is gone (it no longer writes the status files). It
// returns whether it changed any status.
func MarkSupervisorDead(podDir string, at time.Time) (bool, error) {
	sts, err := ReadPodStatus(podDir)
	if err != nil {
		return false, err
	}
	changed := false
	var errs []error
	for i := range sts {
		st := &sts[i]
		if st.State != schema.AppRunning {
			continue
		}
		MarkDead(st, at)
		if err := WriteAppStatus(podDir, st); err != nil {
			errs = append(errs, err)
			continue
		}
		changed = true
	}
	return changed, errors.Join(errs...)
}

// MarkDead changes a running app's status to killed with its supervisor at
// time at (never before it started).
func MarkDead(st *schema.AppStatus, at time.Time) {
	if at.Before(st.StartedAt) {
		at = st.StartedAt
	}
	st.State = schema.AppExited
	st.ExitCode = 128 + int(syscall.SIGKILL)
	st.Signal = "SIGKILL"
	st.FinishedAt = at
	st.Pid = 0
	st.Reason = ReasonSupervisorDied
	st.Message = MessageSupervisorDied
}
