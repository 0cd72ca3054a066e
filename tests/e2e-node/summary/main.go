// Command summary prints the counts of a ginkgo JSON report of the node e2e
// suite: specs passed, failed and skipped at run time (specs left out by
// the focus and skip filters are not counted), then the failed specs.
//
//	summary -runtime rkt build/e2e-node/run-rkt/report/report.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// The parts of ginkgo's types.Report this reads.
type report struct {
	SuiteDescription string
	RunTime          time.Duration
	SpecReports      []spec
}

type spec struct {
	ContainerHierarchyTexts []string
	LeafNodeText            string
	LeafNodeType            string
	State                   string
	RunTime                 time.Duration
	Failure                 struct{ Message string }
}

func (s spec) name() string {
	return strings.Join(append(append([]string(nil), s.ContainerHierarchyTexts...), s.LeafNodeText), " ")
}

func main() {
	rt := flag.String("runtime", "", "runtime name printed with the counts")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: summary [-runtime NAME] report.json")
		os.Exit(2)
	}
	if err := run(*rt, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(rt, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	var reports []report
	if err := json.Unmarshal(b, &reports); err != nil {
		return fmt.Errorf("cannot parse %s: %w", path, err)
	}
	var passed, skipped int
	var failed []string
	var wall time.Duration
	for _, r := range reports {
		wall += r.RunTime
		for _, s := range r.SpecReports {
			switch {
			case s.LeafNodeType != "It":
				if s.State != "passed" && s.State != "skipped" {
					failed = append(failed, fmt.Sprintf("[%s] %s: %s", s.LeafNodeType, s.State, firstLine(s.Failure.Message)))
				}
			case s.State == "passed":
				passed++
			case s.State == "skipped" || s.State == "pending":
				// Specs the filters left out are skipped with no message.
				if s.Failure.Message != "" {
					skipped++
				}
			default:
				failed = append(failed, fmt.Sprintf("%s (%s, %s): %s", s.name(), s.State,
					s.RunTime.Round(time.Second), firstLine(s.Failure.Message)))
			}
		}
	}
	sort.Strings(failed)
	fmt.Printf("node e2e on %s: %d specs run in %s\n", rt, passed+len(failed)+skipped, wall.Round(time.Second))
	for _, f := range failed {
		fmt.Println("FAILED:", f)
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", passed, len(failed), skipped)
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
