package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// exeSegmentsKiB is the size of the read-only mappings (code, rodata) of
// the executable exe in process pid.
func exeSegmentsKiB(t *testing.T, pid int, exe string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kib := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 6 || fields[5] != exe || fields[1][1] == 'w' {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		a, _ := strconv.ParseUint(lo, 16, 64)
		b, _ := strconv.ParseUint(hi, 16, 64)
		kib += int(b-a) >> 10
	}
	return kib
}

// TestCRIServiceDropsStartupPages: once listening, the kubelet-service
// keeps resident only the part of its binary it runs again (pkg/exepages),
// not the whole of it that start-up touched, and answers on.
func TestCRIServiceDropsStartupPages(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env, "--log-level=warn")
	c := dialCRI(t, svc)
	pid, exe := svc.cmd.Process.Pid, testutil.RKTBin(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	seg, p := exeSegmentsKiB(t, pid, exe), readRSSParts(pid, exe)
	t.Logf("binary's code and read-only data: %d KiB, resident %d (text %d, rodata %d)", seg, p.text+p.rodata, p.text, p.rodata)
	// start-up maps 85-95% of them (package initialisation is spread over
	// the whole text); after the drop, the service's background work and
	// calls like these 60-65%
	if seg == 0 || p.text+p.rodata > seg*3/4 {
		t.Errorf("of the binary's %d KiB of code and read-only data, %d are resident after start and a few calls", seg, p.text+p.rodata)
	}
}
