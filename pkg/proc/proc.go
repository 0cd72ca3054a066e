// Package proc reads the host's process table.
package proc

import (
	"fmt"
	"os"
	"strconv"
)

// PIDs lists the processes of /proc (of the calling process's PID
// namespace), zombies included.
func PIDs() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("cannot list processes: %w", err)
	}
	pids := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
