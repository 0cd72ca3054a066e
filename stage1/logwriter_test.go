package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func readLog(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestLineSplitter(t *testing.T) {
	ts := time.Date(2026, 11, 30, 3, 4, 5, 123456789, time.UTC)
	stamp := ts.Format(time.RFC3339Nano)
	tests := []struct {
		name   string
		max    int
		writes []string
		want   []string
	}{
		{"full lines", 100, []string{"a\nbb\n"}, []string{"stdout F a", "stdout F bb"}},
		{"split across writes", 100, []string{"he", "llo\nwor", "ld\n"}, []string{"stdout F hello", "stdout F world"}},
		{"tty carriage return", 100, []string{"x\r\n"}, []string{"stdout F x"}},
		{"empty line", 100, []string{"\n"}, []string{"stdout F "}},
		{"partial then full", 4, []string{"abcdefg\n"}, []string{"stdout P abcd", "stdout F efg"}},
		{"exactly max", 4, []string{"abcd\n"}, []string{"stdout F abcd"}},
		{"two partials", 2, []string{"abcde"}, []string{"stdout P ab", "stdout P cd", "stdout P e"}},
		{"unterminated last line flushed as partial", 100, []string{"last"}, []string{"stdout P last"}},
		{"unterminated tty line keeps its \\r", 100, []string{"a\r"}, []string{"stdout P a\r"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "sub", "log")
			lw, err := OpenLog(p)
			if err != nil {
				t.Fatal(err)
			}
			lw.now = func() time.Time { return ts }
			ls := newLineSplitter(lw, "stdout")
			ls.max = tc.max
			for _, w := range tc.writes {
				ls.Write([]byte(w))
			}
			ls.Flush()
			lw.Close()
			got := readLog(t, p)
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %d entries %q", got, len(tc.want), tc.want)
			}
			for i := range got {
				if want := stamp + " " + tc.want[i]; got[i] != want {
					t.Errorf("entry %d: got %q, want %q", i, got[i], want)
				}
			}
		})
	}
}

func TestLogReopen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "log")
	lw, err := OpenLog(p)
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	if err := lw.WriteEntry("stderr", false, []byte("one")); err != nil {
		t.Fatal(err)
	}
	// Log rotation: the kubelet renames the file and asks for a reopen.
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	if err := lw.Reopen(); err != nil {
		t.Fatal(err)
	}
	if err := lw.WriteEntry("stdout", true, []byte("two")); err != nil {
		t.Fatal(err)
	}
	old, cur := readLog(t, p+".1"), readLog(t, p)
	if len(old) != 1 || !strings.HasSuffix(old[0], " stderr F one") {
		t.Errorf("rotated log: %q", old)
	}
	if len(cur) != 1 || !strings.HasSuffix(cur[0], " stdout P two") {
		t.Errorf("new log: %q", cur)
	}
	if _, err := time.Parse(time.RFC3339Nano, strings.Fields(cur[0])[0]); err != nil {
		t.Errorf("timestamp: %v", err)
	}
	lw.Close()
	if err := lw.WriteEntry("stdout", false, []byte("x")); err == nil {
		t.Error("write after Close succeeded")
	}
}

// TestLogRefusesNonRegular: a symlink planted as the log file's name is not
// followed (at the first open nor at a reopen after rotation), and a FIFO
// there is refused instead of blocking the open until it has a reader.
func TestLogRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "0.log")
	if err := os.Symlink(victim, p); err != nil {
		t.Fatal(err)
	}
	if lw, err := OpenLog(p); err == nil {
		lw.WriteEntry("stdout", false, []byte("planted"))
		lw.Close()
		t.Error("OpenLog followed a symlink")
	}
	os.Remove(p)
	lw, err := OpenLog(p)
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, p); err != nil {
		t.Fatal(err)
	}
	if err := lw.Reopen(); err == nil {
		lw.WriteEntry("stdout", false, []byte("planted"))
		t.Error("Reopen followed a symlink")
	}
	if b, _ := os.ReadFile(victim); string(b) != "secret\n" {
		t.Errorf("the symlink's target was written: %q", b)
	}

	// A hard link to another file is neither written nor given the
	// directory's group.
	linked := filepath.Join(dir, "linked.log")
	if err := os.Link(victim, linked); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, -1, 4242); err != nil {
		t.Fatal(err)
	}
	if lw, err := OpenLog(linked); err == nil || !errors.Is(err, errLinkedLog) {
		if err == nil {
			lw.WriteEntry("stdout", false, []byte("planted"))
			lw.Close()
		}
		t.Errorf("OpenLog of a hard link: %v", err)
	}
	var vst unix.Stat_t
	if err := unix.Stat(victim, &vst); err != nil || vst.Gid == 4242 {
		t.Errorf("the hard link's file got the log directory's group: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "secret\n" {
		t.Errorf("the hard link's file was written: %q", b)
	}

	fifo := filepath.Join(dir, "fifo.log")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		lw, err := OpenLog(fifo)
		if err == nil {
			lw.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("OpenLog opened a FIFO")
		}
	case <-time.After(5 * time.Second):
		if fd, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			defer unix.Close(fd)
		}
		<-done
		t.Error("OpenLog of a FIFO blocked")
	}
}
