package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Environment variables naming the binaries under test (set by `make functional`).
const (
	EnvRKTBin    = "RKT_BIN"    // absolute path of the rkt binary
	EnvStage1Bin = "RKT_STAGE1" // absolute path of the stage1 binary
	EnvTools     = "RKT_TOOLS"  // directory of test tools (crictl, critest)
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error

	binMu      sync.Mutex
	binBuilt   = map[string]string{}
	binFailed  = map[string]error{}
	stage1Once sync.Once
)

// Main runs the tests of a package and removes the binaries testutil built
// for them. Call it from the package's TestMain: os.Exit(testutil.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	return code
}

// RKTBin returns the absolute path of the rkt binary: $RKT_BIN, or one built
// from this module (once per test process). A rkt built here gets a stage1
// built next to it too (where rkt looks for it by default), best effort:
// image tests do not need it.
func RKTBin(t testing.TB) string {
	t.Helper()
	p := binary(t, EnvRKTBin, "rkt", "./rkt")
	if os.Getenv(EnvRKTBin) == "" && os.Getenv(EnvStage1Bin) == "" {
		stage1Once.Do(func() {
			if err := build("stage1", "./stage1"); err != nil {
				t.Logf("no stage1 next to the rkt built for the tests: %v", err)
			}
		})
	}
	return p
}

// Stage1Bin returns the absolute path of the stage1 binary: $RKT_STAGE1, or
// one built from this module next to the built rkt (once per test process).
func Stage1Bin(t testing.TB) string {
	t.Helper()
	return binary(t, EnvStage1Bin, "stage1", "./stage1")
}

// ToolsDir returns $RKT_TOOLS, or "" when it is not set.
func ToolsDir() string { return os.Getenv(EnvTools) }

func binary(t testing.TB, env, name, pkg string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatalf("cannot resolve $%s=%q: %v", env, p, err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("binary from $%s: %v", env, err)
		}
		return abs
	}
	if err := build(name, pkg); err != nil {
		t.Fatalf("%v (set $%s to use a prebuilt one)", err, env)
	}
	binMu.Lock()
	defer binMu.Unlock()
	return binBuilt[name]
}

// build builds pkg as name into the per-process build dir, once.
func build(name, pkg string) error {
	binMu.Lock()
	defer binMu.Unlock()
	if _, ok := binBuilt[name]; ok {
		return nil
	}
	if err, ok := binFailed[name]; ok {
		return err // a build that failed once fails the same way
	}
	err := buildLocked(name, pkg)
	if err != nil {
		binFailed[name] = err
	}
	return err
}

func buildLocked(name, pkg string) error {
	buildOnce.Do(func() { buildDir, buildErr = os.MkdirTemp("", "rkt-testbin-") })
	if buildErr != nil {
		return fmt.Errorf("cannot create build dir: %w", buildErr)
	}
	root, err := moduleRoot()
	if err != nil {
		return fmt.Errorf("cannot build %s: %w", name, err)
	}
	out := filepath.Join(buildDir, name)
	// as the Makefile builds them: rkt static, stage1 with cgo
	cgo := "CGO_ENABLED=1"
	if name == "rkt" {
		cgo = "CGO_ENABLED=0"
	}
	cmd := exec.Command("go", "build", "-tags", "grpcnotrace seccomp", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cannot build %s: %v\n%s", name, err, b)
	}
	binBuilt[name] = out
	return nil
}

// moduleRoot finds the directory of this module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the rkt module")
	}
	return filepath.Dir(gomod), nil
}
