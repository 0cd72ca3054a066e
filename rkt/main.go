// Command rkt is the pod-native container runtime's command line.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := rootCmd().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "rkt: %v\n", err)
		os.Exit(exitCode(err))
	}
}
