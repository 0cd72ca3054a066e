package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzLogSplitter writes an app's output (arbitrary bytes, in arbitrary
// writes) through the line splitter and reads the log back as the kubelet
// does: every line is `<time> <stream> <P|F> <content>`, no content is
// longer than the limit, and the contents joined (a newline after each F)
// are the output, but for the '\r' the splitter may drop before a '\n'.
func FuzzLogSplitter(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), []byte{3, 1}, uint8(4))
	f.Add([]byte("a\r\nb\rc\r\r\n\n\x00\xff"), []byte{1}, uint8(2))
	f.Add([]byte("2026-01-01T00:00:00Z stderr F injected\n"), []byte{7}, uint8(16))
	f.Fuzz(func(t *testing.T, out, cuts []byte, max uint8) {
		ts := time.Date(2026, 12, 8, 1, 2, 3, 4, time.UTC)
		p := filepath.Join(t.TempDir(), "log")
		lw, err := OpenLog(p)
		if err != nil {
			t.Fatal(err)
		}
		lw.now = func() time.Time { return ts }
		ls := newLineSplitter(lw, "stdout")
		ls.max = int(max%64) + 1
		rest := out
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(n, int(cuts[i%len(cuts)])+1)
			}
			ls.Write(rest[:n])
			rest = rest[n:]
		}
		ls.Flush()
		lw.Close()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		prefix := []byte(ts.Format(time.RFC3339Nano) + " stdout ")
		var got []byte
		for _, line := range bytes.SplitAfter(b, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			rec, ok := bytes.CutSuffix(line, []byte("\n"))
			if !ok {
				t.Fatalf("log ends without a newline: %q", line)
			}
			rec, ok = bytes.CutPrefix(rec, prefix)
			if !ok || len(rec) < 2 || rec[1] != ' ' || rec[0] != 'P' && rec[0] != 'F' {
				t.Fatalf("not a CRI log entry: %q", line)
			}
			content := rec[2:]
			if len(content) > ls.max {
				t.Fatalf("entry of %d bytes, longer than %d: %q", len(content), ls.max, line)
			}
			got = append(got, content...)
			if rec[0] == 'F' {
				got = append(got, '\n')
			}
		}
		if !sameButCRs(got, out) {
			t.Fatalf("the log reads back %q, the app wrote %q", got, out)
		}
	})
}

// sameButCRs reports whether got is out with at most the '\r' before each
// '\n' left out (a tty's line end).
func sameButCRs(got, out []byte) bool {
	j := 0
	for i := 0; i < len(out); i++ {
		switch {
		case j < len(got) && got[j] == out[i]:
			j++
		case out[i] == '\r' && i+1 < len(out) && out[i+1] == '\n':
		default:
			return false
		}
	}
	return j == len(got)
}
