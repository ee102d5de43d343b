// Command kubectl-svctrace is the kubectl plugin `kubectl svctrace`. It only
// wires the process (streams, signals, exit code) to package cli.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/kubectl-svctrace/cmd/cli"
)

// Set by -ldflags "-X main.version=… -X main.commit=… -X main.date=…".
var version, commit, date string

// atExit runs just before the process exits; the fleet bench's build (tag
// fleetbench) writes its profiles there.
var atExit = func() {}

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		cancel() // first signal: stop the trace and let cleanup run
		<-signals
		atExit()
		os.Exit(130) // second signal: leave now
	}()

	cmd := cli.NewCmdSvctrace(streams, cli.BuildInfo{Version: version, Commit: commit, Date: date})
	err := cmd.ExecuteContext(ctx)
	cancel()
	if err != nil && !cli.Silent(err) {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		if cli.ExitCode(err) == cli.ExitUsage {
			fmt.Fprintf(os.Stderr, "See 'kubectl svctrace --help' for usage.\n")
		}
	}
	atExit()
	os.Exit(cli.ExitCode(err))
}
