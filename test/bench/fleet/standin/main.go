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
	"bytes"
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
	node, err := topLevelString(request, "nodeName")
	if err != nil {
		return err
	}
	// The observation is read as it is (run.sh writes it compact) and
	// given the node's name: no JSON round trip per exec.
	raw, err := os.ReadFile(os.Getenv("SVCTRACE_STANDIN_OBSERVATION"))
	if err != nil {
		return err
	}
	raw = bytes.TrimSpace(raw)
	name, err := json.Marshal(node)
	if err != nil {
		return err
	}
	if len(raw) < 2 || raw[0] != '{' {
		return fmt.Errorf("the observation is not a JSON object")
	}
	// A later duplicate key wins in encoding/json: the node's name.
	out := append(append(append(raw[:len(raw)-1:len(raw)-1], `,"nodeName":`...), name...), '}', '\n')
	_, err = stdout.Write(out)
	return err
}

// topLevelString is the string value of key in the JSON object doc,
// found in one pass without decoding the rest (a 5,000-endpoint request is
// 600 KiB, and the stand-in runs once per exec).
func topLevelString(doc []byte, key string) (string, error) {
	depth, inString, escaped := 0, false, false
	start := -1
	want := []byte(`"` + key + `"`)
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			if !inString {
				start = i
			} else if depth == 1 && bytes.Equal(doc[start:i+1], want) {
				j := i + 1
				for j < len(doc) && (doc[j] == ' ' || doc[j] == ':' || doc[j] == '\n' || doc[j] == '\t') {
					j++
				}
				var v string
				dec := json.NewDecoder(bytes.NewReader(doc[j:]))
				if err := dec.Decode(&v); err != nil {
					return "", fmt.Errorf("%s: %w", key, err)
				}
				return v, nil
			}
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return "", fmt.Errorf("the request has no %s", key)
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
