package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakeapi"
)

// helperAPIEnv makes the test binary serve a minimal Kubernetes API
// (internal/testutil/fakeapi) so that a real kube-proxy programs its rules
// in a test namespace without a cluster. Value: "listen-addr,<fakeapi.Cluster.Encode()>".
const helperAPIEnv = "SVCTRACE_TEST_FAKE_APISERVER"

// fakeAPIAddr is where the helper listens, inside the node namespace.
const fakeAPIAddr = "127.0.0.1:18080"

func fakeAPISpec(c fakeapi.Cluster) string {
	return fmt.Sprintf("%s=%s,%s", helperAPIEnv, fakeAPIAddr, c.Encode())
}

func serveFakeAPI(spec string) {
	addr, enc, _ := strings.Cut(spec, ",")
	c, err := fakeapi.Decode(enc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake apiserver spec:", err)
		os.Exit(2)
	}
	fmt.Fprintln(os.Stderr, "fake apiserver:", c.Serve(addr))
	os.Exit(1)
}
