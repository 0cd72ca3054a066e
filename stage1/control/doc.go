// Package control is the client side of the stage1 pod supervisor: stage0
// uses it to drive a running pod, and to read app status from disk when the
// supervisor is gone. It imports only the standard library, pkg/schema and
// the OCI runtime-spec types, so that stage0 and the lean stage1 binary can
// both use it.
//
// # Starting the supervisor
//
// stage0 starts `<stage1> run --pod-dir=<abs pod dir> [--mode=run|sandbox]
// [--debug]` with Setsid, Cloneflags CLONE_NEWUTS|CLONE_NEWIPC (no NEWIPC when
// PodManifest.HostIPC), stdout/stderr to <pod>/stage1.log, ExtraFiles[0]
// (fd 3) = the pod directory, flock'ed exclusively by stage0 (stage0 closes
// its own copy after the start), ExtraFiles[1] (fd 4) = the write end of the
// readiness pipe. stage1 marks both fds close-on-exec so that apps never
// inherit the pod lock. It writes "ok\n" on fd 4 once stage1.pid and
// stage1.sock exist and, in mode run, every app of the manifest has been
// started; otherwise it writes a one-line error message, cleans up and
// exits non-zero. WaitReady reads that pipe.
//
// In mode run the supervisor exits (status 0) once every app has exited; the
// apps' exit codes are in their status files. In mode sandbox it starts no
// app and lives until Shutdown or SIGTERM (SIGTERM = Shutdown with a 10s
// grace period). On exit it destroys its apps' libcontainer containers (state
// root <pod>/runc) and removes the pod's cgroups. `<stage1> gc
// --pod-dir=<dir>` is a one-shot cleaner for a supervisor that was killed: it
// kills what is left in the pod's cgroups, destroys the containers, removes the
// cgroups and <pod>/runc, and marks apps still recorded as running as exited
// (Reason "SupervisorDied"). It is idempotent. A killed supervisor's apps
// die at once: `stage1 init` gives every container process SIGKILL as its
// parent-death signal, and the supervisor forks them all from its main
// thread, which never exits.
//
// `<stage1> attach-mounts TARGET...` attaches detached mounts (fds 4, 5,
// ...) at TARGET... in the mount namespace of the process whose pidfd is
// fd 3 (a supervisor not in stage0's), leaving a target that is a mount
// point there as it is.
//
// An idle supervisor (15s with no call, no app exit, no exec or attach
// session) re-executes itself from that thread as `stage1 lean
// --pod-dir=<dir> ...`, a small C image that only writes the apps' output to
// their logs; a connection, an app's exit or SIGTERM/SIGINT/SIGHUP makes it
// exec `stage1 resume --pod-dir=<dir> ...`, the Go supervisor again. Both
// keep the pid, the children and the socket (a call waits in its backlog);
// a partial line is logged as a P entry at each change.
//
// The pod's cgroup is <PodManifest.CgroupParent or "/rkt">/<uuid> (cgroupfs);
// apps' linux.cgroupsPath must lie below it so that stage1 and `stage1 gc`
// remove them with it. When systemd is PID 1, stage1 uses libcontainer's
// systemd driver and turns <parent>/<uuid>/<app> into the scope
// rkt-<uuid>-<app>.scope in system.slice (or in <parent> if it is a .slice),
// and moves itself into the transient scope rkt-stage1-<uuid>.scope so that
// a restart of the service that started it does not kill the pod.
//
// Status without the supervisor: status.json stays on disk after the
// supervisor exits. If the supervisor died (the pod lock is free) an app
// recorded as "running" is dead: run `stage1 gc`, which records it as exited
// (exit code 137, signal SIGKILL, Reason "SupervisorDied"), or report it so.
//
// Logs: each app's stdout/stderr go to App.LogPath (relative: to the app
// directory; default apps/<name>/log) in the kubelet's CRI format, lines over
// 16 KiB split into P entries; a tty's output is logged as stdout. App.Stdin
// keeps a pipe (or the tty) open for Attach; App.StdinOnce closes it when the
// first attach session ends.
//
// # Apps
//
// An app is what stage0 wrote under <pod>/apps/<name>/ (config.json,
// rootfs mounted) and listed in the pod manifest. StartApp reads
// those files when it is called, so stage0 writes them first. An app with no
// status.json has never been started (state "created" from stage0's point of
// view). StartApp on an exited app starts it again (a new container).
// PrestartApp creates a created app's container in the background (up to
// its process, which waits), so that StartApp only has to run the process;
// StartApp waits for a prestart under way, and does it all itself when the
// prestart failed. RemoveApp and the supervisor's exit release a
// prestarted container that was never started. Request.Deadline (the
// context's) bounds a start and the set-up of an exec: processes still
// being set up 5 s past it (an init blocked in a mount) are killed, the
// call fails, and a start that got the app only after its deadline does
// not run it. A prestart is bounded by 2 minutes, or by the deadline of a
// start waiting for it.
// StopApp sends App.StopSignal (default SIGTERM), then SIGKILL after the
// timeout (0: SIGKILL at once); on an app that is not running it is a no-op.
// Exit status: exit code, or 128+signal with Signal set; Reason "Completed"
// (code 0), "Error", "OOMKilled" (an OOM kill in the app's memory cgroup) or
// "StartError" (code 128, Message says why). RemoveApp refuses a
// running app (ErrAppRunning); it makes the supervisor forget the app and
// destroys its container; the app directory is stage0's to delete.
//
// # Checkpoints
//
// OpCheckpoint (CheckpointSpec) freezes every listed running app, dumps each
// with criu (libcontainer's Checkpoint, leaving it running) into
// <Dir>/<app>/criu and archives its overlay upper directory as
// <Dir>/<app>/rootfs.tar, then thaws them all and answers; on error it
// removes what it wrote. libcontainer runs "criu" from PATH: the supervisor
// links CheckpointSpec.Criu as <pod>/criu/criu and puts that directory
// first. An app whose directory holds restore/ (criu images, written by
// stage0 for RestorePod) is restored from them by its OpStart, into a new
// container, instead of running its process.
//
// # Wire protocol (over <pod>/stage1.sock, one connection per call)
//
// The client writes one JSON Request followed by '\n'; the server answers one
// JSON Response followed by '\n'. Response.Error non-empty means failure and
// Response.Code classifies it (CodeNotFound, CodeRunning, CodeNotRunning,
// CodeInvalid), mapped by the client to the sentinel errors of this package.
// For OpExec and OpAttach, after a successful Response both sides switch to
// frames: 1 byte type, 4 bytes big-endian length, payload (see Frame*).
// Client to server: FrameStdin (data), FrameStdinClose, FrameResize (JSON
// TermSize). Server to client: FrameStdout, FrameStderr, FrameExit (JSON
// ExitResult), after which the server closes the connection. A client that
// closes its connection ends an attach (the app keeps running) or kills the
// exec'd process.
package control
