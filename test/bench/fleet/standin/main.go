// Command standin is the collector a kwok node runs in the fleet bench
// (test/bench/fleet): kwok serves an exec into a fake agent Pod by running
// this locally, as `svctrace-collector --request-file -`. It reads the
// request the plugin sent, and answers with the recorded real observation
// in $SVCTRACE_STANDIN_OBSERVATION as that node's. It reads nothing of the
// host and opens no socket.
//
// kwok v0.8.0 never closes an exec's stdin, so the request is read up to
// the end of its one JSON document (or gzip member), not to EOF.
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
}

func run(stdin io.Reader, stdout io.Writer) error {
	in := bufio.NewReader(stdin)
	var body io.Reader = in
	if magic, err := in.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return err
		}
		zr.Multistream(false)
		body = zr
	}
	var req struct {
		NodeName string `json:"nodeName"`
	}
	if err := json.NewDecoder(body).Decode(&req); err != nil {
		return fmt.Errorf("read the request: %w", err)
	}
	raw, err := os.ReadFile(os.Getenv("SVCTRACE_STANDIN_OBSERVATION"))
	if err != nil {
		return err
	}
	var obs map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obs); err != nil {
		return err
	}
	if obs["nodeName"], err = json.Marshal(req.NodeName); err != nil {
		return err
	}
	out, err := json.Marshal(obs)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}
