// Package testutil is the functional test framework shared by every test in
// ./tests: it locates (or builds) the rkt and stage1 binaries, runs rkt with a
// private data dir and private config dirs, builds deterministic OCI images
// from Debian's busybox-static, writes them as oci-archive, docker-archive
// and OCI layout, serves them from an in-process registry on 127.0.0.1
// (optionally behind basic or bearer-token auth, optionally slow), builds
// hostile layers, and checks that a test left nothing behind (CheckLeaks).
//
// The functional tests live in package tests (./tests); its only TestMain is
// tests/main_test.go, which calls testutil.Main so that binaries built for the
// run are removed afterwards. Do not add another TestMain to package tests.
//
// A test typically starts with
//
//	env := testutil.NewEnv(t) // private --dir and config dirs; leak check at cleanup
//	reg := testutil.StartRegistry(t)
//	ref := reg.Push(t, "busybox:1", testutil.Busybox(t))
//	out := env.RunOK("fetch", "--no-progress", ref)
package testutil
