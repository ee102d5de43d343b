// Command fakeapi serves nfbench's bench Services from a fake Kubernetes API
// (internal/testutil/fakeapi) to a real kube-proxy. It is a binary of its
// own so that nfbench's reader child, whose RSS and start time are measured,
// does not link the Kubernetes API types (the collector does not either).
//
//	fakeapi serve <listen-addr> <node-name> <node-ip> <services> <endpoints-per-service>
//	fakeapi serve-cluster <listen-addr> <cluster.json>   (a fakeapi.Cluster as JSON)
//	fakeapi config <dir> <listen-addr> <mode> <node-name> <node-ip> <cluster-cidr>
//
// config writes <dir>/kubeconfig and <dir>/kube-proxy.yaml for a kube-proxy
// talking to it (fakeapi.Kubeconfig, fakeapi.KubeProxyConfig).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakeapi"
	"github.com/svctrace/kubectl-svctrace/test/bench/netfilter/kpgen"
)

func main() {
	a := os.Args[1:]
	switch {
	case len(a) == 6 && a[0] == "serve":
		n, err1 := strconv.Atoi(a[4])
		m, err2 := strconv.Atoi(a[5])
		if err1 != nil || err2 != nil {
			die("bad counts %q %q", a[4], a[5])
		}
		c := fakeapi.Cluster{NodeName: a[2], NodeIP: a[3], BenchServices: n, BenchEndpoints: m}
		// nfbench's reader builds its query from kpgen.BenchService: the
		// API must serve exactly those Services.
		if m == 4 {
			for i := 0; i < n; i++ {
				if err := same(kpgen.BenchService(i), fakeapi.BenchService(i, 4, false)); err != nil {
					die("%v", err)
				}
			}
		}
		die("%v", c.Serve(a[1]))
	case len(a) == 3 && a[0] == "serve-cluster":
		b, err := os.ReadFile(a[2])
		if err != nil {
			die("%v", err)
		}
		c, err := fakeapi.Decode(string(b))
		if err != nil {
			die("%s: %v", a[2], err)
		}
		die("%v", c.Serve(a[1]))
	case len(a) == 7 && a[0] == "config":
		dir := a[1]
		kubeconfig := filepath.Join(dir, "kubeconfig")
		write(kubeconfig, fakeapi.Kubeconfig(a[2]))
		write(filepath.Join(dir, "kube-proxy.yaml"), fakeapi.KubeProxyConfig(a[3], a[4], a[5], a[6], kubeconfig))
	default:
		die("usage: fakeapi serve <addr> <node> <node-ip> <services> <endpoints> | serve-cluster <addr> <cluster.json> | config <dir> <addr> <mode> <node> <node-ip> <cluster-cidr>")
	}
}

func write(path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		die("%v", err)
	}
}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fakeapi: "+format+"\n", args...)
	os.Exit(2)
}

func same(k kpgen.Service, f fakeapi.Service) error {
	ok := k.Namespace == f.Namespace && k.Name == f.Name && k.ClusterIP == f.ClusterIP && len(k.Endpoints) == len(f.Endpoints) &&
		len(k.Ports) == 1 && k.Ports[0].Name == f.PortName && k.Ports[0].Port == f.Port
	for j := 0; ok && j < len(k.Endpoints); j++ {
		ok = k.Endpoints[j].IP == f.Endpoints[j] && k.Endpoints[j].Port == f.TargetPort
	}
	if !ok {
		return fmt.Errorf("kpgen and fakeapi disagree on bench Service %s: %+v vs %+v", k.Name, k, f)
	}
	return nil
}
