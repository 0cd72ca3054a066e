package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// pause waits for SIGTERM or SIGINT and reaps children meanwhile.
func pause() {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range ch {
		if s == syscall.SIGCHLD {
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}

// pgrep prints the pids of processes whose name (comm) matches the
// extended regular expression; exit 0 when one matched, 1 otherwise.
func pgrep(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: pgrep PATTERN")
		return 2
	}
	re, err := regexp.Compile(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgrep: %v\n", err)
		return 2
	}
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	found := 1
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		if re.MatchString(strings.TrimSpace(string(comm))) {
			fmt.Println(pid)
			found = 0
		}
	}
	return found
}

// ipcs lists the System V shared memory segments of the IPC namespace in
// util-linux's format (only -m, the default, is supported).
func ipcs(args []string) error {
	for _, a := range args {
		if a != "-m" {
			return fmt.Errorf("unsupported option %q (only -m)", a)
		}
	}
	f, err := os.Open("/proc/sysvipc/shm")
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Println()
	fmt.Println("------ Shared Memory Segments --------")
	fmt.Printf("%-10s %-10s %-10s %-10s %-10s %-12s %-12s\n", "key", "shmid", "owner", "perms", "bytes", "nattch", "status")
	s := bufio.NewScanner(f)
	s.Scan() // header
	for s.Scan() {
		// key shmid perms size cpid lpid nattch uid gid ...
		fl := strings.Fields(s.Text())
		if len(fl) < 8 {
			continue
		}
		key, _ := strconv.ParseInt(fl[0], 10, 64)
		perms, _ := strconv.ParseInt(fl[2], 10, 64)
		fmt.Printf("0x%08x %-10s %-10s %-10o %-10s %-12s\n", uint32(key), fl[1], fl[7], perms&0o777, fl[3], fl[6])
	}
	fmt.Println()
	return s.Err()
}
