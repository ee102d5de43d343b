package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func scenarioTrace(t *testing.T, name string) *report.ServiceTrace {
	t.Helper()
	for _, sc := range scenarios {
		if sc.name == name {
			return sc.trace()
		}
	}
	t.Fatalf("no scenario %q", name)
	return nil
}

// diffPairs are the comparisons with goldens: a fault appearing, the same
// fault going away, the collectors failing on a healthy Service, and no
// change at all.
var diffPairs = []struct{ name, before, after string }{
	{"diff/fault", "healthy", "no-endpoints"},
	{"diff/fixed", "no-endpoints", "healthy"},
	{"diff/collectors", "healthy", "collectors-failed"},
	{"diff/none", "healthy", "healthy"},
}

func TestDiffGolden(t *testing.T) {
	for _, pair := range diffPairs {
		before, after := scenarioTrace(t, pair.before), scenarioTrace(t, pair.after)
		after.Metadata.Time = before.Metadata.Time.Add(10 * time.Minute)
		d := report.Diff(before, after)
		d.Before.Source, d.After.Source = pair.before+".json", pair.after+".json"
		for _, v := range variants {
			if v.opts.Details {
				continue // a comparison has no wide view
			}
			t.Run(pair.name+"/"+v.name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := PrintDiff(&buf, d, FormatText, v.opts); err != nil {
					t.Fatal(err)
				}
				if hasANSI := strings.Contains(buf.String(), "\x1b["); hasANSI != v.opts.Color {
					t.Errorf("ANSI escapes present=%v with Color=%v", hasANSI, v.opts.Color)
				}
				golden(t, pair.name+"."+v.name+".txt", buf.Bytes())
			})
		}
		t.Run(pair.name+"/json", func(t *testing.T) {
			var buf bytes.Buffer
			if err := PrintDiff(&buf, d, FormatJSON, TextOptions{}); err != nil {
				t.Fatal(err)
			}
			var back report.TraceDiff
			if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.Kind != report.DiffKind {
				t.Fatalf("JSON does not parse back: %v %+v", err, back.Kind)
			}
			golden(t, pair.name+".json", buf.Bytes())
		})
	}
}

// TestWatchGolden: the lines a watch prints when a healthy Service's Pods
// start crash-looping, and nothing when a trace is followed by an equal one.
func TestWatchGolden(t *testing.T) {
	before, after := scenarioTrace(t, "healthy"), scenarioTrace(t, "no-endpoints")
	at := before.Metadata.Time.Add(90 * time.Second)
	for _, v := range variants {
		if v.opts.Details {
			continue // the watch lines have no wide form
		}
		t.Run(v.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WatchText(&buf, at, time.Time{}, report.Diff(before, after), report.EndpointChanges(before, after), v.opts); err != nil {
				t.Fatal(err)
			}
			golden(t, "diff/watch."+v.name+".txt", buf.Bytes())
			buf.Reset()
			if err := WatchText(&buf, at, time.Time{}, report.Diff(after, after), report.EndpointChanges(after, after), v.opts); err != nil || buf.Len() != 0 {
				t.Errorf("an unchanged trace printed %q (%v)", buf.String(), err)
			}
		})
	}
}

// TestWatchGoldenNodesAsRead: a change judged against a node report read
// before it; every line about a node says when that node was read.
func TestWatchGoldenNodesAsRead(t *testing.T) {
	before, after := scenarioTrace(t, "nodes-healthy"), scenarioTrace(t, "nodes-failing")
	at := before.Metadata.Time.Add(12 * time.Second)
	for _, v := range variants {
		if v.opts.Details {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WatchText(&buf, at, before.Metadata.Time, report.Diff(before, after), report.EndpointChanges(before, after), v.opts); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), "(node as read at "+before.Metadata.Time.UTC().Format("15:04:05")+")") {
				t.Errorf("no node line says when the node was read:\n%s", buf.String())
			}
			golden(t, "diff/watch-nodes-as-read."+v.name+".txt", buf.Bytes())
		})
	}
}
