//go:build race

package tarx

// raceDetector is true in a build with the race detector.
const raceDetector = true
