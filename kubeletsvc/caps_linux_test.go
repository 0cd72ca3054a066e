package kubeletsvc

import (
	"os"
	"slices"
	"testing"

	"github.com/moby/sys/capability"
)

func TestHeldCapabilities(t *testing.T) {
	held, lacking, err := heldCapabilities()
	if err != nil {
		t.Fatal(err)
	}
	supported, err := capability.ListSupported()
	if err != nil {
		t.Fatal(err)
	}
	if len(held)+len(lacking) != len(supported) {
		t.Fatalf("held %d + lacking %d != supported %d", len(held), len(lacking), len(supported))
	}
	for _, c := range held {
		if slices.Contains(lacking, c) {
			t.Fatalf("%s is both held and lacking", c)
		}
	}
	if os.Geteuid() == 0 && !slices.Contains(held, "CAP_CHOWN") {
		t.Fatalf("root does not hold CAP_CHOWN: %v", held)
	}
}
