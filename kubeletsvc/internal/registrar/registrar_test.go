package registrar

import (
	"errors"
	"testing"
)

func TestReserve(t *testing.T) {
	r := New()
	steps := []struct {
		op       string
		name, id string
		wantErr  bool
	}{
		{"reserve", "a", "1", false},
		{"reserve", "a", "1", false}, // idempotent
		{"reserve", "a", "2", true},  // taken
		{"reserve", "b", "1", true},  // id holds another name
		{"reserve", "b", "2", false},
		{"release", "", "1", false},
		{"reserve", "a", "3", false}, // freed by release
		{"releaseName", "b", "", false},
		{"reserve", "b", "4", false},
	}
	for i, s := range steps {
		var err error
		switch s.op {
		case "reserve":
			err = r.Reserve(s.name, s.id)
		case "release":
			r.Release(s.id)
		case "releaseName":
			r.ReleaseName(s.name)
		}
		if (err != nil) != s.wantErr {
			t.Fatalf("step %d %s(%q,%q): err=%v, wantErr=%v", i, s.op, s.name, s.id, err, s.wantErr)
		}
	}
	if id, ok := r.Owner("a"); !ok || id != "3" {
		t.Fatalf("Owner(a) = %q,%v; want 3,true", id, ok)
	}
	var er *ErrReserved
	if err := r.Reserve("a", "9"); !errors.As(err, &er) || er.Owner != "3" {
		t.Fatalf("Reserve taken name: %v", err)
	}
}
