package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// maxLogLine is the longest log entry; longer lines are split into partial
// (P) entries, as the kubelet's own runtimes do.
const maxLogLine = 16 * 1024

// LogWriter appends entries to an app's log in the kubelet's CRI format:
// `<RFC3339Nano> <stdout|stderr> <P|F> <line>`. Both streams of an app share
// one LogWriter so entries never interleave mid-line.
type LogWriter struct {
	mu   sync.Mutex
	path string
	f    *os.File
	now  func() time.Time
}

// errNotRegularLog refuses a log path that is no regular file.
var errNotRegularLog = errors.New("not a regular file")

// errLinkedLog refuses a log file that has other names (hard links).
var errLinkedLog = errors.New("a file with other hard links")

// OpenLog opens (creating it and its directory) the log file at path for
// appending.
func OpenLog(path string) (*LogWriter, error) {
	lw := &LogWriter{path: path, now: time.Now}
	if err := lw.open(); err != nil {
		return nil, err
	}
	return lw, nil
}

func (lw *LogWriter) open() error {
	if err := os.MkdirAll(filepath.Dir(lw.path), 0o755); err != nil {
		return fmt.Errorf("cannot create log directory for %q: %w", lw.path, err)
	}
	// Whoever may write the log directory must not send the log, appended
	// as root, to another file: a symlink there is not followed, a FIFO
	// (which would block the open until it has a reader) or a device is
	// refused, and so is a hard link to another file (which would also get
	// the directory's group).
	f, err := os.OpenFile(lw.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o640)
	if errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("cannot open log %q (a symlink, not followed): %w", lw.path, err)
	}
	if err != nil {
		return fmt.Errorf("cannot open log %q: %w", lw.path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return fmt.Errorf("cannot open log %q: %w", lw.path, errNotRegularLog)
	}
	if st.Nlink != 1 {
		f.Close()
		return fmt.Errorf("cannot open log %q: %w", lw.path, errLinkedLog)
	}
	// A log takes its directory's group: the rkt group reads the logs in
	// pod directories, the kubelet's log directories stay root's.
	if err := chgrpAsDir(f, filepath.Dir(lw.path)); err != nil {
		f.Close()
		return err
	}
	lw.f = f
	return nil
}

// Reopen closes the log file and opens path again, for log rotation.
func (lw *LogWriter) Reopen() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.f != nil {
		lw.f.Close()
		lw.f = nil
	}
	return lw.open()
}

// file is the open log file (nil if closed).
func (lw *LogWriter) file() *os.File {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.f
}

// Close closes the log file.
func (lw *LogWriter) Close() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.f == nil {
		return nil
	}
	err := lw.f.Close()
	lw.f = nil
	return err
}

// WriteEntry writes one entry of stream ("stdout" or "stderr").
func (lw *LogWriter) WriteEntry(stream string, partial bool, line []byte) error {
	tag := "F"
	if partial {
		tag = "P"
	}
	var b bytes.Buffer
	b.Grow(len(line) + 64)
	b.WriteString(lw.now().Format(time.RFC3339Nano))
	b.WriteByte(' ')
	b.WriteString(stream)
	b.WriteByte(' ')
	b.WriteString(tag)
	b.WriteByte(' ')
	b.Write(line)
	b.WriteByte('\n')
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.f == nil {
		return fmt.Errorf("log %q is closed", lw.path)
	}
	if _, err := lw.f.Write(b.Bytes()); err != nil {
		return fmt.Errorf("cannot write log %q: %w", lw.path, err)
	}
	return nil
}

// lineSplitter turns a byte stream into log entries: full lines (without
// their '\n', and without a trailing '\r' from a tty) and partial chunks of
// maxLogLine bytes.
type lineSplitter struct {
	lw      *LogWriter
	stream  string
	pending []byte
	max     int
}

func newLineSplitter(lw *LogWriter, stream string) *lineSplitter {
	return &lineSplitter{lw: lw, stream: stream, max: maxLogLine}
}

// Write implements io.Writer; it never fails so the app's output keeps
// flowing even when the log cannot be written (the error is logged once).
func (s *lineSplitter) Write(p []byte) (int, error) {
	s.pending = append(s.pending, p...)
	for {
		i := bytes.IndexByte(s.pending, '\n')
		switch {
		case i >= 0 && i <= s.max:
			s.emit(false, bytes.TrimSuffix(s.pending[:i], []byte{'\r'}))
			s.pending = s.pending[i+1:]
			continue
		case len(s.pending) >= s.max:
			s.emit(true, s.pending[:s.max])
			s.pending = s.pending[s.max:]
			continue
		}
		break
	}
	if len(s.pending) == 0 {
		s.pending = nil
	}
	return len(p), nil
}

// Flush writes what is left at the end of the stream (a last line without
// '\n') as a partial entry, as containerd and CRI-O do: a reader must not
// add a newline the app never wrote (the kubelet's FallbackToLogsOnError
// termination message of "echo -n DONE" is "DONE").
func (s *lineSplitter) Flush() {
	if len(s.pending) > 0 {
		s.emit(true, s.pending)
		s.pending = nil
	}
}

func (s *lineSplitter) emit(partial bool, line []byte) {
	if err := s.lw.WriteEntry(s.stream, partial, line); err != nil {
		slog.Debug("cannot write a log entry", "error", err)
	}
}

func chgrpAsDir(f *os.File, dir string) error {
	var st, dst unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("cannot stat log %q: %w", f.Name(), err)
	}
	if err := unix.Stat(dir, &dst); err != nil {
		return fmt.Errorf("cannot stat log directory %q: %w", dir, err)
	}
	if st.Gid == dst.Gid {
		return nil
	}
	if err := f.Chown(-1, int(dst.Gid)); err != nil {
		return fmt.Errorf("cannot give log %q the group of its directory: %w", f.Name(), err)
	}
	return nil
}
