package tests

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/rkt/rkt/"

// TestLayering keeps the dependencies of Documentation/architecture.md
// true: rkt/ and kubeletsvc/ -> stage0 -> stage1/control, networking, store
// -> pkg/, and the lean stage1 free of grpc, CRI and registry code.
func TestLayering(t *testing.T) {
	rules := []struct {
		tree    string   // a package and its subpackages
		allowed []string // the project's packages (and their subpackages) they may import
	}{
		{"pkg", nil},
		{"store", []string{"pkg"}},
		{"networking", []string{"pkg"}},
		{"stage1", []string{"pkg"}},
		{"stage0", []string{"pkg", "stage1/control", "networking", "store"}},
		{"kubeletsvc", []string{"pkg", "stage0", "store"}},
	}
	for _, r := range rules {
		for pkg, imports := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./"+r.tree+"/...") {
			for _, imp := range imports {
				rel, ok := strings.CutPrefix(imp, module)
				if !ok {
					continue
				}
				if !within(rel, append([]string{r.tree}, r.allowed...)) {
					t.Errorf("%s imports %s: %s may only import %v", pkg, imp, r.tree, r.allowed)
				}
			}
		}
	}
	// stage1 is re-executed as every container's init: no grpc, no CRI,
	// no registry client, however indirectly.
	for pkg := range goList(t, "-deps", "-f", "{{.ImportPath}}", "./stage1") {
		for _, bad := range []string{"google.golang.org/grpc", "k8s.io/cri-api", "github.com/google/go-containerregistry", module + "store", module + "stage0", module + "kubeletsvc"} {
			if pkg == bad || strings.HasPrefix(pkg, bad+"/") {
				t.Errorf("stage1 depends on %s", pkg)
			}
		}
	}
}

// within reports whether the project package rel is one of trees or below.
func within(rel string, trees []string) bool {
	for _, t := range trees {
		if rel == t || strings.HasPrefix(rel, t+"/") {
			return true
		}
	}
	return false
}

// goList runs go list with args in the module root and returns, for each
// line, its first word and the others.
func goList(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	res := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			res[f[0]] = f[1:]
		}
	}
	return res
}
