package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

const (
	sigTERM = unix.SIGTERM
	sigKILL = unix.SIGKILL
)

// exitStatus turns a wait result into an exit code and a signal name; a
// process killed by signal N gets exit code 128+N, as shells and the CRI do.
func exitStatus(ps *os.ProcessState, err error) (int, string) {
	if ps == nil {
		if ee, ok := err.(interface{ ProcessState() *os.ProcessState }); ok {
			ps = ee.ProcessState()
		}
	}
	if ps == nil {
		return 255, ""
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok {
		return ps.ExitCode(), ""
	}
	return waitStatusCode(ws)
}

// waitStatusCode is exitStatus of a wait status.
func waitStatusCode(ws syscall.WaitStatus) (int, string) {
	if ws.Signaled() {
		return 128 + int(ws.Signal()), signalName(ws.Signal())
	}
	return ws.ExitStatus(), ""
}

// parseSignal parses "SIGQUIT", "QUIT" or "3"; empty means SIGTERM.
func parseSignal(s string) (syscall.Signal, error) {
	if s == "" {
		return sigTERM, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown stop signal %q", s)
}

func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(s))
}

// oomKilled reports whether the kernel OOM-killed a process in the
// container's memory cgroup (the oom_kill counter of memory.oom_control on
// v1, memory.events on v2); call it before the container is destroyed.
func oomKilled(ctr *libcontainer.Container) bool {
	st, err := ctr.State()
	if err != nil {
		return false
	}
	if p, ok := st.CgroupPaths["memory"]; ok && p != "" {
		if n, ok := readKeyed(filepath.Join(p, "memory.oom_control"), "oom_kill"); ok {
			return n > 0
		}
	}
	if p, ok := st.CgroupPaths[""]; ok && p != "" {
		if n, ok := readKeyed(filepath.Join(p, "memory.events"), "oom_kill"); ok {
			return n > 0
		}
	}
	return false
}

// readKeyed reads the value of key in a "key value" per line cgroup file.
func readKeyed(path, key string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
