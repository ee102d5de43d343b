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
	var request []byte
	if magic, err := in.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		// The plugin sends a large request as a series of gzip members
		// (the parts every node shares compressed once): read member
		// after member until the JSON document is complete.
		var doc jsonEnd
		zr, err := gzip.NewReader(in)
		for err == nil {
			zr.Multistream(false)
			var member []byte
			if member, err = io.ReadAll(zr); err != nil {
				break
			}
			request = append(request, member...)
			if doc.feed(member) {
				break
			}
			err = zr.Reset(in)
		}
		if err != nil {
			return fmt.Errorf("read the gzipped request: %w", err)
		}
	} else {
		var raw json.RawMessage
		if err := json.NewDecoder(in).Decode(&raw); err != nil {
			return fmt.Errorf("read the request: %w", err)
		}
		request = raw
	}
	var req struct {
		NodeName string `json:"nodeName"`
	}
	if err := json.Unmarshal(request, &req); err != nil {
		return fmt.Errorf("decode the request: %w", err)
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

// jsonEnd follows a JSON document's nesting through its strings, to tell
// when its outermost value has closed.
type jsonEnd struct {
	depth           int
	started         bool
	inString, quote bool
}

// feed reads more of the document and reports whether it is complete.
func (j *jsonEnd) feed(b []byte) bool {
	for _, c := range b {
		switch {
		case j.quote:
			j.quote = false
		case j.inString && c == '\\':
			j.quote = true
		case c == '"':
			j.inString = !j.inString
		case j.inString:
		case c == '{' || c == '[':
			j.depth++
			j.started = true
		case c == '}' || c == ']':
			j.depth--
			if j.started && j.depth == 0 {
				return true
			}
		}
	}
	return false
}
