// Command critest-standins provides the programs of the images critest
// pulls, for running critest offline: one static binary installed under
// several names (like busybox), dispatching on the name it was run as.
//
//	nginx, httpd   a web server answering 200 (nginx: on $NGINX_PORT or 80,
//	               pid file /var/run/nginx.pid, cmdline "nginx: master process ...")
//	nonewprivs     prints "Effective uid: N" (installed setuid root)
//	pause          sleeps until SIGTERM/SIGINT, reaping children
//	pgrep          prints the pids of processes whose name matches a pattern
//	ipcs           lists System V shared memory segments (-m)
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	name := filepath.Base(os.Args[0])
	var err error
	switch {
	case strings.HasPrefix(name, "nginx"):
		err = nginx(os.Args)
	case name == "httpd":
		err = httpd()
	case name == "nonewprivs":
		fmt.Printf("Effective uid: %d\n", os.Geteuid())
	case name == "pause":
		pause()
	case name == "pgrep":
		os.Exit(pgrep(os.Args[1:]))
	case name == "ipcs":
		err = ipcs(os.Args[1:])
	default:
		err = fmt.Errorf("unknown personality %q", name)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
