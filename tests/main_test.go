package tests

import (
	"os"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// TestMain is the only TestMain of package tests: it removes the binaries
// testutil built when $RKT_BIN / $RKT_STAGE1 were not given.
func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m))
}
