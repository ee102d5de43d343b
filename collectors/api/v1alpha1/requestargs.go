package v1alpha1

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
)

// A request travels to the collector Pod as container arguments (no
// ConfigMap, so no RBAC for one). Linux caps one argument at 128 KiB
// (MAX_ARG_STRLEN), which a Service with about 900 endpoints already
// exceeds as plain JSON. Larger requests are therefore gzipped, base64
// encoded and split over repeated --request-gz arguments.
const (
	// RequestInlineMax is the largest request sent as plain JSON
	// (--request), readable in `kubectl get pod -o yaml`.
	RequestInlineMax = 32 << 10
	// requestChunk is the size of one --request-gz argument.
	requestChunk = 96 << 10
	// RequestArgsMax bounds the encoded request: the Pod object must stay
	// well under the API server's 1.5 MiB request limit, and all arguments
	// together under the kernel's (a quarter of the 8 MiB stack limit).
	RequestArgsMax = 1 << 20
)

// IsGzip says whether b is gzip data rather than JSON (which never starts
// with gzip's magic bytes).
func IsGzip(b []byte) bool { return len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b }

// RequestArgs returns the container arguments that carry requestJSON. It
// may be gzipped already (IsGzip): a plugin that compresses the parts every
// node shares once hands the result over as it is.
func RequestArgs(requestJSON []byte) ([]string, error) {
	if IsGzip(requestJSON) {
		return gzipArgs(requestJSON, -1)
	}
	if len(requestJSON) <= RequestInlineMax {
		return []string{"--request", string(requestJSON)}, nil
	}
	gz, err := GzipRequest(requestJSON)
	if err != nil {
		return nil, err
	}
	return gzipArgs(gz, len(requestJSON))
}

// GzipRequest compresses a JSON request at gzip's default level, not the
// best: 4.4 ms instead of 22 ms for a 5,000-endpoint request (46 KiB
// instead of 41), and a request is compressed once per inspected node.
func GzipRequest(requestJSON []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(requestJSON); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipArgs is the --request-gz arguments of a gzipped request of jsonLen
// bytes (-1: not known).
func gzipArgs(gz []byte, jsonLen int) ([]string, error) {
	enc := base64.StdEncoding.EncodeToString(gz)
	if len(enc) > RequestArgsMax {
		of := ""
		if jsonLen >= 0 {
			of = fmt.Sprintf(" (%d KiB of JSON)", jsonLen>>10)
		}
		return nil, fmt.Errorf("the collector request is %d KiB compressed%s, over the %d KiB a collector Pod can carry",
			len(enc)>>10, of, RequestArgsMax>>10)
	}
	var args []string
	for len(enc) > 0 {
		n := min(requestChunk, len(enc))
		args = append(args, "--request-gz", enc[:n])
		enc = enc[n:]
	}
	return args, nil
}

// DecodeRequestChunks joins the --request-gz arguments, in order, back into
// the request's JSON.
func DecodeRequestChunks(chunks []string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.Join(chunks, ""))
	if err != nil {
		return nil, fmt.Errorf("--request-gz: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("--request-gz: %w", err)
	}
	// 64 MiB of JSON is far beyond any request RequestArgs accepts.
	out, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("--request-gz: %w", err)
	}
	return out, nil
}
