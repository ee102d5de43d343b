//go:build fleetbench

package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

// The fleet bench (test/bench/fleet) builds the plugin with -tags fleetbench
// to see where a trace's time and memory go: a CPU profile of the whole run
// to SVCTRACE_CPUPROFILE and a heap profile at exit to SVCTRACE_MEMPROFILE.
// Release builds do not contain this file.
func init() {
	if path := os.Getenv("SVCTRACE_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			prev := atExit
			atExit = func() { pprof.StopCPUProfile(); f.Close(); prev() }
		}
	}
	if path := os.Getenv("SVCTRACE_MEMPROFILE"); path != "" {
		runtime.MemProfileRate = 64 << 10
		prev := atExit
		atExit = func() {
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			prev()
		}
	}
}
