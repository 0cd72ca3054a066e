package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
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

// layoutNames are the names of the pod directory layout that only
// pkg/schema joins into paths (schema.PodsDir, PodDir, AppDir).
var layoutNames = map[string]bool{
	"pods": true, "pod": true, "apps": true, "netns": true, "net-info.json": true, "userns": true,
	"stage1.pid": true, "stage1.sock": true, "stage1.log": true, "stage1.died": true, "stage0-cleaned": true,
	"volumes": true, "config.json": true, "status.json": true, "stage0.json": true, "log": true,
	"fs": true, "fs/rootfs": true, "fs/upper": true, "fs/work": true, "rootfs": true, "upper": true, "work": true,
	"empty": true, "idmap": true, "imagevols": true,
}

// TestLayoutOwner keeps the pod directory layout in one place: no code
// outside pkg/schema joins a layout name into a path, and only stage0 (the
// one statistics pipeline) reads a process's network counters.
func TestLayoutOwner(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", path)
		if d.IsDir() {
			switch rel {
			case "tests", "build", "pkg/schema", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Join" {
					return true
				}
				if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "filepath" && pkg.Name != "path" {
					return true
				}
				for _, a := range n.Args {
					if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, _ := strconv.Unquote(lit.Value); layoutNames[s] {
							t.Errorf("%s: joins %q by hand: ask pkg/schema's PodDir or AppDir", fset.Position(lit.Pos()), s)
						}
					}
				}
			case *ast.BasicLit:
				if s, _ := strconv.Unquote(n.Value); n.Kind == token.STRING && strings.Contains(s, "/net/dev") && !strings.HasPrefix(rel, "stage0/") {
					t.Errorf("%s: reads network counters outside stage0's statistics", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
