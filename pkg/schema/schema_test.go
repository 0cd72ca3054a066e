package schema

import (
	"errors"
	"testing"
)

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{Version, ""} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	if err := CheckVersion("rkt/v9"); !errors.Is(err, ErrNewerVersion) {
		t.Errorf("rkt/v9: %v, want ErrNewerVersion", err)
	}
}
