package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// nodeOnlyImports are the kernel-facing libraries of the node readers and
// the collector-side packages of this module. The plugin talks to
// collectors only through the contract package (collectors/api/v1alpha1),
// so none of them may end up in its binary.
var nodeOnlyImports = []string{
	"github.com/google/nftables",
	"github.com/mdlayher/netlink",
	"github.com/cilium/ebpf",
	"github.com/moby/ipvs",
	"github.com/ti-mo/conntrack",
	"github.com/ti-mo/netfilter",
	"github.com/vishvananda/netlink",
	"github.com/coreos/go-iptables",
	"github.com/svctrace/kubectl-svctrace/collectors/iptables",
	"github.com/svctrace/kubectl-svctrace/collectors/nftables",
	"github.com/svctrace/kubectl-svctrace/collectors/ipvs",
	"github.com/svctrace/kubectl-svctrace/collectors/ebpf",
	"github.com/svctrace/kubectl-svctrace/collectors/conntrack",
	"github.com/svctrace/kubectl-svctrace/collectors/route",
	"github.com/svctrace/kubectl-svctrace/collectors/dns",
	"github.com/svctrace/kubectl-svctrace/collectors/probe",
	"github.com/svctrace/kubectl-svctrace/collectors/sockets",
	"github.com/svctrace/kubectl-svctrace/collectors/proxy",
}

// TestPluginLinksNoNodeReader lists the plugin's dependencies with go list
// -deps, for Linux (where the readers' netlink code builds) and the other
// release platforms, and fails on any node-only package.
func TestPluginLinksNoNodeReader(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", ".")
			cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps: %v\n%s", err, stderrOf(err))
			}
			deps := strings.Fields(string(out))
			if len(deps) < 50 {
				t.Fatalf("go list -deps gave %d packages; the check would prove nothing", len(deps))
			}
			for _, dep := range deps {
				if dep == "github.com/svctrace/kubectl-svctrace/collectors" {
					t.Errorf("the plugin links the collector runtime %s", dep)
				}
				for _, bad := range nodeOnlyImports {
					if dep == bad || strings.HasPrefix(dep, bad+"/") {
						t.Errorf("the plugin links %s (node-only: %s)", dep, bad)
					}
				}
			}
		})
	}
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}
