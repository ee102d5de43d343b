// Command svctrace-collector reads one Service's datapath state on the node it
// runs on and prints one JSON NodeObservation (svctrace.dev/v1alpha1) on
// stdout. It runs in a short-lived hostNetwork Pod with NET_ADMIN and NET_RAW.
//
// Usage:
//
//	svctrace-collector --request '<json>'
//	svctrace-collector --request-file req.json
//	svctrace-collector < req.json
//
// Exit codes: 0 when an observation was printed, even if sections failed (their
// errors are in the JSON); 2 for a bad request or bad flags.
package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// version is set with -ldflags "-X main.version=…".
var version = "dev"

const exitBadRequest = 2

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("svctrace-collector", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		reqJSON = fs.String("request", "", "the CollectRequest as JSON")
		reqFile = fs.String("request-file", "", "read the CollectRequest from this file (- for stdin)")
		reqGz   chunks
		opts    Options
		pretty  bool
		showVer bool
		wait    bool
	)
	fs.Var(&reqGz, "request-gz", "the CollectRequest gzipped and base64-encoded, split over repeated flags (large requests; see collectorapi.RequestArgs)")
	fs.StringVar(&opts.ProxyMetricsAddress, "proxy-metrics-address", "127.0.0.1:10249", "kube-proxy metrics address (/proxyMode, /metrics)")
	fs.StringVar(&opts.ProxyHealthzAddress, "proxy-healthz-address", "127.0.0.1:10256", "kube-proxy healthz address (/healthz)")
	fs.StringVar(&opts.BPFFSRoot, "bpffs", "/sys/fs/bpf", "root of the BPF filesystem holding pinned maps")
	fs.DurationVar(&opts.Timeout, "timeout", 30*time.Second, "upper bound for the whole collection")
	fs.IntVar(&opts.FlowCap, "flow-cap", 50, "most conntrack flows listed per list (counts stay exact)")
	fs.IntVar(&opts.ProbeConcurrency, "probe-concurrency", 8, "concurrent probes")
	fs.StringVar(&opts.ConntrackMethod, "conntrack-method", "", "conntrack flow dump: tuple-filter, status-filter, or empty for tuple-filter with fallback")
	fs.StringVar(&opts.IPTablesReader, "iptables-reader", "", "iptables rules: empty reads them from the kernel (netlink for nf_tables, the table blob for legacy) with the iptables commands as fallback; text reads through the iptables commands only")
	fs.BoolVar(&pretty, "pretty", false, "indent the JSON")
	fs.BoolVar(&showVer, "version", false, "print the version and exit")
	fs.BoolVar(&wait, "wait", false, "idle until SIGTERM, reading nothing: the node agent's main process, which `kubectl exec` runs the collector beside")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitBadRequest
	}
	if wait {
		// The agent holds no credentials and opens nothing: every
		// collection is a new process started by an exec through the
		// API server, with the user's permissions.
		<-ctx.Done()
		return 0
	}
	if showVer {
		fmt.Fprintln(stdout, version)
		return 0
	}
	inline := *reqJSON
	if len(reqGz) > 0 {
		if inline != "" {
			fmt.Fprintln(stderr, "error: give --request or --request-gz, not both")
			return exitBadRequest
		}
		raw, err := collectorapi.DecodeRequestChunks(reqGz)
		if err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return exitBadRequest
		}
		inline = string(raw)
	}
	req, err := readRequest(inline, *reqFile, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitBadRequest
	}
	ensureXtablesLock()
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	obs := Collect(ctx, req, opts)
	enc := json.NewEncoder(stdout)
	if pretty {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(obs); err != nil {
		fmt.Fprintf(stderr, "error: write observation: %v\n", err)
		return 1
	}
	return 0
}

// chunks collects a repeated flag's values in order.
type chunks []string

func (c *chunks) String() string     { return strings.Join(*c, "") }
func (c *chunks) Set(v string) error { *c = append(*c, v); return nil }

// readRequest takes the request from --request, --request-file, or stdin,
// in that order, and validates it.
func readRequest(inline, file string, stdin io.Reader) (*collectorapi.Request, error) {
	var raw []byte
	switch {
	case inline != "" && file != "":
		return nil, errors.New("give --request or --request-file, not both")
	case inline != "":
		raw = []byte(inline)
	case file != "" && file != "-":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read request: %w", err)
		}
		raw = b
	default:
		b, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
		if err != nil {
			return nil, fmt.Errorf("read request from stdin: %w", err)
		}
		raw = b
	}
	// The plugin gzips the request it sends a node agent on stdin: a
	// 5,000-endpoint request is a tenth of its size, through the API
	// server, for each of a thousand nodes. JSON never starts with gzip's
	// magic bytes.
	if len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytesReader(raw))
		if err != nil {
			return nil, fmt.Errorf("read gzipped request: %w", err)
		}
		if raw, err = io.ReadAll(io.LimitReader(zr, 64<<20)); err != nil {
			return nil, fmt.Errorf("read gzipped request: %w", err)
		}
	}
	var req collectorapi.Request
	dec := json.NewDecoder(bytesReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("decode request: %w", err)
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("invalid request: %w", err)
	}
	return &req, nil
}

// ensureXtablesLock points XTABLES_LOCKFILE at a writable temp file when the
// default /run/xtables.lock cannot be opened: the collector Pod has a
// read-only root filesystem, and legacy iptables listings refuse to run
// without their lock file. An explicit XTABLES_LOCKFILE is kept.
func ensureXtablesLock() {
	if os.Getenv("XTABLES_LOCKFILE") != "" {
		return
	}
	if f, err := os.OpenFile("/run/xtables.lock", os.O_RDWR|os.O_CREATE, 0o600); err == nil {
		f.Close()
		return
	}
	_ = os.Setenv("XTABLES_LOCKFILE", filepath.Join(os.TempDir(), "svctrace-xtables.lock"))
}
