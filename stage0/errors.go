package stage0

import "errors"

// Errors callers branch on (use errors.Is).
var (
	ErrPodNotFound   = errors.New("pod not found")
	ErrAmbiguousUUID = errors.New("ambiguous pod UUID prefix")
	ErrAppNotFound   = errors.New("app not found")
	ErrAppExists     = errors.New("app already exists")
	ErrNotRunning    = errors.New("pod is not running")
	ErrInvalidState  = errors.New("pod is not in a state that allows this")
	ErrInvalid       = errors.New("invalid argument")
	ErrExists        = errors.New("already exists")
)
