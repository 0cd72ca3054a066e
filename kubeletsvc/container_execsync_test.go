package kubeletsvc

import (
	"bytes"
	"testing"
)

func TestExecOutputBudget(t *testing.T) {
	out := &execOutput{room: 10}
	o, e := &execStream{out: out}, &execStream{out: out}
	for _, w := range []struct {
		s *execStream
		p string
	}{{o, "abcdef"}, {e, "1234"}, {o, "xyz"}, {e, "5"}} {
		if n, err := w.s.Write([]byte(w.p)); n != len(w.p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w.p, n, err)
		}
	}
	if o.buf.String() != "abcdef" || e.buf.String() != "1234" || out.dropped != 4 {
		t.Fatalf("stdout %q stderr %q dropped %d; want abcdef, 1234, 4", o.buf.String(), e.buf.String(), out.dropped)
	}
	if !bytes.Equal(o.buf.Bytes(), []byte("abcdef")) {
		t.Fatal("stdout changed")
	}
}
