package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

const masterPrefix = "nginx: master process"

const indexPage = "<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1></body></html>\n"

// nginx re-executes itself so that /proc/<pid>/cmdline reads like nginx's
// master process, then serves HTTP and records its pid in /var/run/nginx.pid.
func nginx(args []string) error {
	if !strings.HasPrefix(args[0], masterPrefix) {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		argv := append([]string{masterPrefix + " " + strings.Join(args, " ")}, args[1:]...)
		return syscall.Exec(exe, argv, os.Environ())
	}
	port := os.Getenv("NGINX_PORT")
	if port == "" {
		port = "80"
	}
	if err := os.MkdirAll("/var/run", 0o755); err == nil {
		os.WriteFile("/var/run/nginx.pid", []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644)
	}
	return serve(":"+port, "nginx")
}

// httpd serves HTTP on :80 and logs that it started.
func httpd() error {
	return serve(":80", "httpd")
}

func serve(addr, name string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "[%s] %s: listening on %s\n", time.Now().Format(time.RFC3339), name, addr)
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT)
		<-ch
		os.Exit(0)
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(os.Stdout, "%s %s %s %s\n", name, r.RemoteAddr, r.Method, r.URL.Path)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, indexPage)
	})
	return (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(l)
}
