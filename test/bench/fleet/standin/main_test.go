package main

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

func member(t *testing.T, s string) []byte {
	t.Helper()
	b, err := collectorapi.GzipRequest([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAnswersWithoutEOF: kwok never closes an exec's stdin; the stand-in
// answers once the request's JSON is complete, plain or as gzip members
// (a string holding braces and an escaped quote included).
func TestAnswersWithoutEOF(t *testing.T) {
	t.Setenv("SVCTRACE_STANDIN_OBSERVATION", "../../../../collectors/testdata/observations/real-kube-proxy-iptables-netns.json")
	plain := []byte(`{"endpoints":[{"ip":"10.0.0.1","podName":"a}\"]{"}],"nodeName":"fleet-0007"}`)
	var gz []byte
	for _, part := range []string{`{"endpoints":[`, `{"ip":"10.0.0.1","podName":"a}\"]{"}`, `],`, `"nodeName":"fleet-0007"}`} {
		gz = append(gz, member(t, part)...)
	}
	for name, request := range map[string][]byte{"plain": plain, "gzip members": gz} {
		t.Run(name, func(t *testing.T) {
			r, w := io.Pipe()
			defer w.Close()
			go func() { _, _ = w.Write(request) }() // and never closed
			var out bytes.Buffer
			done := make(chan error, 1)
			go func() { done <- run(r, &out) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("still waiting for stdin to close")
			}
			var obs struct {
				Kind     string `json:"kind"`
				NodeName string `json:"nodeName"`
			}
			if err := json.Unmarshal(out.Bytes(), &obs); err != nil || obs.Kind != "NodeObservation" || obs.NodeName != "fleet-0007" {
				t.Fatalf("answer %+v (%v)", obs, err)
			}
		})
	}
}
