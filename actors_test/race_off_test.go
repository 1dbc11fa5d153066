//go:build !race

package actors_test

// raceEnabled: the race detector slows the client about tenfold.
const raceEnabled = false
