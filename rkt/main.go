// Command rkt is the pod-native container runtime's command line.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	if err := rootCmd().Execute(); err != nil {
		// An exitError without a cause only carries an app's exit code.
		var ee *exitError
		if !errors.As(err, &ee) || ee.err != nil {
			fmt.Fprintf(os.Stderr, "rkt: %v\n", err)
		}
		os.Exit(exitCode(err))
	}
}
