package cliexample

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestParse(t *testing.T) {
	good := `  # Trace web
  kubectl svctrace web

  # Two lines
  # of comment, two commands
  kubectl svctrace web -o json
  kubectl svctrace web --port 'my port'   # trailing note
`
	lines, err := Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || lines[1].Comment != "Two lines of comment, two commands" ||
		!slices.Equal(lines[2].Args, []string{"web", "--port", "my port"}) {
		t.Fatalf("lines %+v", lines)
	}
	for name, bad := range map[string]string{
		"no comment":           "  kubectl svctrace web",
		"comment after blank":  "  # Trace\n\n  kubectl svctrace web",
		"not kubectl svctrace": "  # Trace\n  kubectl-svctrace web",
		"comment only":         "  # Trace\n\n  # Other\n  kubectl svctrace web",
		"comment in the block": "  # Trace\n  kubectl svctrace web\n  # Other\n  kubectl svctrace x",
		"open quote":           "  # Trace\n  kubectl svctrace 'web",
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: no error for %q", name, bad)
		}
	}
}

func TestResolve(t *testing.T) {
	newRoot := func() *cobra.Command {
		root := &cobra.Command{Use: "svctrace SERVICE", Args: cobra.ExactArgs(1), RunE: func(*cobra.Command, []string) error { return nil }}
		root.Flags().String("port", "", "")
		sub := &cobra.Command{Use: "cleanup", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { return nil }}
		sub.Flags().String("collector-namespace", "", "")
		sub.Flags().Bool("dry", false, "")
		root.AddCommand(sub)
		return root
	}
	tests := []struct {
		args    string
		command string
		err     string
	}{
		{"web --port http", "svctrace", ""},
		{"cleanup --collector-namespace x", "svctrace cleanup", ""},
		{"--port http cleanup", "svctrace cleanup", "unknown flag: --port"},
		{"cleanup --port http", "svctrace cleanup", "unknown flag: --port"},
		{"web --port", "svctrace", "flag needs an argument"},
		{"cleanup --dry true", "svctrace cleanup", "unknown command"},
		{"web other", "svctrace", "accepts 1 arg"},
	}
	for _, tt := range tests {
		c, _, err := Resolve(newRoot(), strings.Fields(tt.args))
		if c == nil || c.CommandPath() != tt.command {
			t.Errorf("%q: resolved %v, want %s", tt.args, c, tt.command)
		}
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%q: err %v, want %q", tt.args, err, tt.err)
		}
		if c != nil && !IsWithin(c, "svctrace") {
			t.Errorf("%q: %s not within svctrace", tt.args, c.CommandPath())
		}
	}
}
