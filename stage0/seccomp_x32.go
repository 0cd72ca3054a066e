package stage0

import (
	"bytes"
	"os"
	"runtime"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// x32Bit marks an x32 system call on amd64 (__X32_SYSCALL_BIT).
const x32Bit = 0x40000000

// x32Runs reports whether the kernel runs x32 system calls: most kernels
// are built or booted without them (CONFIG_X86_X32_ABI, syscall.x32=), and
// an x32 call then fails with ENOSYS. The probe is an x32 getpid, made only
// when no seccomp filter confines this process (one could kill it for the
// call); confined, x32 counts as running.
var x32Runs = sync.OnceValue(func() bool {
	if runtime.GOARCH != "amd64" {
		return false
	}
	st, err := os.ReadFile("/proc/self/status")
	if err != nil || !bytes.Contains(st, []byte("\nSeccomp:\t0\n")) {
		return true
	}
	_, _, errno := unix.RawSyscall(unix.SYS_GETPID|x32Bit, 0, 0, 0)
	return errno != unix.ENOSYS
})

// kernelArchs drops the x32 ABI from archs when the kernel does not run it:
// no x32 program can run there anyway (with x32 left out, the filter kills
// an x32 caller instead of letting the kernel fail the call), and each
// architecture of the default profile costs every container start and exec
// ~8 ms of libseccomp compilation in the container's init.
func kernelArchs(archs []specs.Arch) []specs.Arch {
	if x32Runs() {
		return archs
	}
	out := make([]specs.Arch, 0, len(archs))
	for _, a := range archs {
		if a != specs.ArchX32 {
			out = append(out, a)
		}
	}
	return out
}
