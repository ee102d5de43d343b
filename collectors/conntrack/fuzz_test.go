package conntrack

import "testing"

// FuzzParseProcStat: any file content must parse or fail cleanly, never panic.
func FuzzParseProcStat(f *testing.F) {
	f.Add(procStatRecorded)
	f.Add("entries found\n0000000a 00000001\n")
	f.Add("entries\n\n")
	f.Fuzz(func(t *testing.T, text string) {
		_, _ = ParseProcStat(text)
	})
}
