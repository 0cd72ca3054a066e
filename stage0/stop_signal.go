package stage0

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// appStopSignal is the signal that asks an app to stop, as a name
// ("SIGQUIT"): the option when given, else the image's STOPSIGNAL, else ""
// (stage1 sends SIGTERM).
func appStopSignal(opt string, img *Image) (string, error) {
	if opt != "" {
		sig, err := NormalizeSignal(opt)
		if err != nil {
			return "", fmt.Errorf("stop signal: %w", err)
		}
		return sig, nil
	}
	if img != nil && img.Config != nil && img.Config.Config.StopSignal != "" {
		sig, err := NormalizeSignal(img.Config.Config.StopSignal)
		if err != nil {
			return "", fmt.Errorf("STOPSIGNAL of image %s: %w", img.ID, err)
		}
		return sig, nil
	}
	return "", nil
}

// NormalizeSignal turns a signal name (with or without "SIG", any case,
// aliases like SIGCLD, real-time forms SIGRTMIN+n and SIGRTMAX-n) or a
// number into the form stage1 sends: the name of a standard signal
// ("SIGQUIT") or the number of a real-time one ("35").
func NormalizeSignal(s string) (string, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.Atoi(s)
	if err != nil {
		if n, err = signalNumber(strings.ToUpper(s)); err != nil {
			return "", err
		}
	}
	if n <= 0 || n > sigRTMax {
		return "", fmt.Errorf("signal %q out of range: %w", s, ErrInvalid)
	}
	if n < sigRTMin {
		if name := unix.SignalName(unix.Signal(n)); name != "" {
			return name, nil
		}
	}
	return strconv.Itoa(n), nil
}

// sigRTMin and sigRTMax are the real-time signals as the C library and the
// CRI number them (glibc keeps 32 and 33 for itself).
const (
	sigRTMin = 34
	sigRTMax = 64
)

var signalAliases = map[string]string{"SIGCLD": "SIGCHLD", "SIGIOT": "SIGABRT", "SIGPOLL": "SIGIO"}

// signalNumber parses a signal name.
func signalNumber(name string) (int, error) {
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if a, ok := signalAliases[name]; ok {
		name = a
	}
	if n := unix.SignalNum(name); n != 0 {
		return int(n), nil
	}
	rt := func(base int, rest string, sign int) (int, error) {
		if rest == "" {
			return base, nil
		}
		k, err := strconv.Atoi(rest)
		if n := base + sign*k; err == nil && k >= 0 && n >= sigRTMin && n <= sigRTMax {
			return n, nil
		}
		return 0, fmt.Errorf("unknown signal %q: %w", name, ErrInvalid)
	}
	if rest, ok := strings.CutPrefix(name, "SIGRTMIN"); ok {
		return rt(sigRTMin, strings.TrimPrefix(rest, "+"), 1)
	}
	if rest, ok := strings.CutPrefix(name, "SIGRTMAX"); ok {
		return rt(sigRTMax, strings.TrimPrefix(rest, "-"), -1)
	}
	return 0, fmt.Errorf("unknown signal %q: %w", name, ErrInvalid)
}
