package iptables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Command is one program invocation. Env entries are added to the runner's
// environment.
type Command struct {
	Name string
	Args []string
	Env  []string
}

// String renders the command the way a person would type it; it is also the
// key of recorded outputs in tests.
func (c Command) String() string {
	return strings.TrimSpace(c.Name + " " + strings.Join(c.Args, " "))
}

// Runner is the one narrow door through which the iptables reader runs
// programs and reads /proc, so tests can replay recorded outputs and the
// integration tests can point it at a network namespace.
type Runner interface {
	// Stream runs c and hands its stdout to consume while it runs. A non-zero
	// exit is returned as *ExitError.
	Stream(ctx context.Context, c Command, consume func(stdout io.Reader) error) error
	// ReadFile reads a file as seen from the target network namespace
	// (e.g. /proc/self/net/ip_tables_names).
	ReadFile(ctx context.Context, path string) ([]byte, error)
}

// ExitError is a command that ran and exited non-zero.
type ExitError struct {
	Command string
	Code    int
	Stderr  string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s: exit status %d: %s", e.Command, e.Code, strings.TrimSpace(e.Stderr))
}

// chainAbsent reports whether err is iptables saying the chain (or table)
// does not exist. iptables-nft 1.8.9 on a node whose rules are nftables-native
// says "chain … is incompatible, use 'nft' tool." for a missing chain.
func chainAbsent(err error) bool {
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 1 {
		return false
	}
	s := ee.Stderr
	return strings.Contains(s, "No chain/target/match by that name") ||
		strings.Contains(s, "is incompatible, use 'nft' tool") ||
		strings.Contains(s, "does not exist") ||
		strings.Contains(s, "Table does not exist")
}

// ExecRunner runs the real programs. With NetNS set (a path such as
// /var/run/netns/x) every command runs under `nsenter --net=NetNS`; the
// collector itself runs in the node's network namespace and leaves it empty.
type ExecRunner struct {
	NetNS string
}

func (r ExecRunner) command(ctx context.Context, c Command) *exec.Cmd {
	name, args := c.Name, c.Args
	if r.NetNS != "" {
		args = append([]string{"--net=" + r.NetNS, "--", name}, args...)
		name = "nsenter"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	return cmd
}

// Stream implements Runner.
func (r ExecRunner) Stream(ctx context.Context, c Command, consume func(io.Reader) error) error {
	cmd := r.command(ctx, c)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 64 << 10}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	// A 1 MiB pipe lets iptables-save run ahead of the parser instead of
	// blocking on every 64 KiB (best effort; the default size still works).
	growPipe(pw)
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return fmt.Errorf("%s: %w", c, err)
	}
	pw.Close()
	out := pr
	defer pr.Close()
	cerr := consume(out)
	if cerr != nil {
		// Drain so the child can exit, then report the consumer's error.
		_, _ = io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	if werr != nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			return &ExitError{Command: c.String(), Code: ee.ExitCode(), Stderr: stderr.String()}
		}
		return fmt.Errorf("%s: %w", c, werr)
	}
	return cerr
}

// ReadFile implements Runner.
func (r ExecRunner) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if r.NetNS == "" {
		return os.ReadFile(path)
	}
	var buf bytes.Buffer
	err := r.Stream(ctx, Command{Name: "cat", Args: []string{path}}, func(rd io.Reader) error {
		_, err := io.Copy(&buf, rd)
		return err
	})
	if err != nil {
		var ee *ExitError
		if errors.As(err, &ee) && strings.Contains(ee.Stderr, "No such file") {
			return nil, os.ErrNotExist
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n <= 0 {
		return len(p), nil
	}
	q := p
	if len(q) > l.n {
		q = q[:l.n]
	}
	l.n -= len(q)
	_, err := l.w.Write(q)
	return len(p), err
}
