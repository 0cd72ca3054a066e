package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"
)

// criLogLine is one line of a CRI-format log:
// <RFC3339Nano> <stdout|stderr> <P|F> <content>.
type criLogLine struct {
	time    time.Time
	stream  string
	partial bool
	content []byte
}

// parseCRILogLine parses one line (without its newline).
func parseCRILogLine(line []byte) (criLogLine, bool) {
	var l criLogLine
	parts := bytes.SplitN(line, []byte{' '}, 4)
	if len(parts) < 3 {
		return l, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(parts[0]))
	if err != nil {
		return l, false
	}
	l.time = t
	l.stream = string(parts[1])
	if l.stream != "stdout" && l.stream != "stderr" {
		return l, false
	}
	switch string(parts[2]) {
	case "P":
		l.partial = true
	case "F":
	default:
		return l, false
	}
	if len(parts) == 4 {
		l.content = parts[3]
	}
	return l, true
}

// logFollower copies the content of one app's CRI log to stdout/stderr.
type logFollower struct {
	path   string
	prefix string // printed before each line when several apps are shown
	f      *os.File
	r      *bufio.Reader
	buf    []byte // an incomplete line read so far
	atBOL  bool   // the next content starts a new output line
}

// pump copies every complete line available now; it returns whether it
// copied anything.
func (lf *logFollower) pump(stdout, stderr io.Writer) (bool, error) {
	if lf.f == nil {
		f, err := os.Open(lf.path)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		lf.f, lf.r, lf.atBOL = f, bufio.NewReader(f), true
	}
	progressed := false
	for {
		chunk, err := lf.r.ReadBytes('\n')
		lf.buf = append(lf.buf, chunk...)
		if err == io.EOF {
			return progressed, nil
		}
		if err != nil {
			return progressed, err
		}
		line := bytes.TrimSuffix(lf.buf, []byte{'\n'})
		lf.buf = nil
		progressed = true
		l, ok := parseCRILogLine(line)
		if !ok {
			continue
		}
		w := stdout
		if l.stream == "stderr" {
			w = stderr
		}
		if lf.atBOL && lf.prefix != "" {
			io.WriteString(w, lf.prefix)
		}
		w.Write(l.content)
		if !l.partial {
			w.Write([]byte{'\n'})
		}
		lf.atBOL = !l.partial
	}
}

func (lf *logFollower) close() {
	if lf.f != nil {
		lf.f.Close()
	}
}

// followLogs prints the logs of the given files; with follow it keeps going
// until done is closed, then drains what is left.
func followLogs(ctx context.Context, lfs []*logFollower, stdout, stderr io.Writer, follow bool, done <-chan struct{}) error {
	defer func() {
		for _, lf := range lfs {
			lf.close()
		}
	}()
	pumpAll := func() (bool, error) {
		any := false
		for _, lf := range lfs {
			p, err := lf.pump(stdout, stderr)
			if err != nil {
				return any, err
			}
			any = any || p
		}
		return any, nil
	}
	for {
		finished := !follow
		if !finished {
			select {
			case <-done:
				finished = true
			default:
			}
		}
		progressed, err := pumpAll()
		if err != nil {
			return err
		}
		if finished {
			// one more pass: lines written just before the end
			_, err := pumpAll()
			return err
		}
		if !progressed {
			select {
			case <-ctx.Done():
				return nil
			case <-done:
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
