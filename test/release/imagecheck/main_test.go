package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type entry struct {
	name, link string
	dir        bool
}

// writeImage writes a one-layer docker-archive with the given entries and entrypoint.
func writeImage(t *testing.T, entries []entry, entrypoint []string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o755}
		switch {
		case e.dir:
			h.Typeflag = tar.TypeDir
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, 4
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte("\x7fELF")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.Config.Entrypoint = entrypoint
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "collector.tar")
	if err := tarball.WriteToFile(p, name.MustParseReference("svctrace.local/collector:test"), img); err != nil {
		t.Fatal(err)
	}
	return p
}

// usrMerged is a small image like the testbed's: /sbin -> usr/sbin, iptables
// an alternatives-style symlink, the collector in /usr/local/bin.
var usrMerged = []entry{
	{name: "usr/", dir: true}, {name: "usr/sbin/", dir: true}, {name: "usr/bin/", dir: true},
	{name: "sbin", link: "usr/sbin"}, {name: "bin", link: "usr/bin"},
	{name: "usr/sbin/xtables-nft-multi"},
	{name: "usr/sbin/iptables", link: "iptables-nft"},
	{name: "usr/sbin/iptables-save", link: "xtables-nft-multi"},
	{name: "usr/sbin/iptables-restore", link: "/usr/sbin/xtables-nft-multi"},
	{name: "usr/sbin/ip6tables", link: "../sbin/xtables-nft-multi"},
	{name: "usr/sbin/ip6tables-save", link: "xtables-nft-multi"},
	{name: "usr/sbin/ip6tables-restore", link: "xtables-nft-multi"},
	{name: "usr/sbin/iptables-nft", link: "xtables-nft-multi"},
	{name: "usr/sbin/nft"},
	{name: "usr/bin/ip"},
	{name: "usr/local/", dir: true}, {name: "usr/local/bin/", dir: true},
	{name: "usr/local/bin/svctrace-collector"},
}

// fakeDpkg answers like dpkg -L, with Debian 12's split of /sbin and /usr/sbin.
func fakeDpkg(pkg string) ([]string, error) {
	return map[string][]string{
		"iptables": {"/.", "/usr", "/usr/sbin", "/usr/sbin/iptables-nft", "/usr/sbin/xtables-nft-multi", "/usr/share/doc/iptables/copyright"},
		"nftables": {"/usr/sbin/nft", "/usr/share/man/man8/nft.8.gz"},
		"iproute2": {"/bin/ip", "/etc/iproute2/rt_tables"},
	}[pkg], nil
}

// replace returns entries with the one named like e swapped for e.
func replace(entries []entry, e entry) []entry {
	out := append([]entry{}, entries...)
	for i := range out {
		if out[i].name == e.name {
			out[i] = e
		}
	}
	return out
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRun(t *testing.T) {
	dockerfile := "../../../build/collector/Dockerfile"
	pkgs := writeFile(t, "packages.txt", "# test\niptables\nnftables # the CLI\niproute2\n")
	ep := []string{"/usr/local/bin/svctrace-collector"}
	withoutNft := replace(usrMerged, entry{name: "usr/sbin/nft", dir: true})
	tests := []struct {
		name       string
		entries    []entry
		entrypoint []string
		want       []string // substrings, one per expected problem; none: clean
	}{
		{name: "matching image", entries: usrMerged, entrypoint: ep},
		{name: "a package's program missing", entries: withoutNft, entrypoint: ep,
			want: []string{"package nftables: 1 of its 1 programs are not in the image: /usr/sbin/nft"}},
		{name: "dangling alternative", entrypoint: ep,
			entries: replace(usrMerged, entry{name: "usr/sbin/ip6tables-save", link: "ip6tables-nft-save"}),
			want:    []string{"/usr/sbin/ip6tables-save (the iptables alternative"}},
		{name: "other entrypoint", entries: usrMerged, entrypoint: []string{"/svctrace-collector"},
			want: []string{"entrypoint"}},
		{name: "binary elsewhere and docs left", entrypoint: ep,
			entries: append(append([]entry{}, usrMerged[:len(usrMerged)-1]...), entry{name: "svctrace-collector"}, entry{name: "usr/share/doc/iptables/copyright"}),
			want:    []string{"collector binary /usr/local/bin/svctrace-collector", "files under /usr/share/doc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := writeImage(t, tt.entries, tt.entrypoint)
			var out bytes.Buffer
			problems, err := run(img, dockerfile, pkgs, fakeDpkg, &out)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != len(tt.want) {
				t.Fatalf("problems = %q, want %d matching %q", problems, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], w)
				}
			}
			if !strings.Contains(out.String(), "size: ") {
				t.Errorf("no size line in %q", out.String())
			}
		})
	}
}

func TestDockerfileProblems(t *testing.T) {
	real, err := os.ReadFile("../../../build/collector/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := parseDockerfile(string(real))
	if err != nil {
		t.Fatal(err)
	}
	if p := spec.problems("packages.txt"); len(p) != 0 {
		t.Fatalf("the release Dockerfile: %q", p)
	}
	if spec.BinaryPath != "/usr/local/bin/svctrace-collector" || len(spec.Entrypoint) != 1 || spec.Entrypoint[0] != spec.BinaryPath {
		t.Errorf("binary %q entrypoint %q: want both /usr/local/bin/svctrace-collector", spec.BinaryPath, spec.Entrypoint)
	}

	mutations := []struct {
		name, from, to, want string
	}{
		{"extra package", "--no-install-recommends $(", "--no-install-recommends curl $(", "outside packages.txt: [curl]"},
		{"recommends", "--no-install-recommends ", "", "without --no-install-recommends"},
		{"lists kept", "/var/lib/apt/lists/* ", "", "does not remove /var/lib/apt/lists/*"},
		{"second install", "apt-get clean;", "apt-get install -y tcpdump; apt-get clean;", "exactly one apt-get install"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			mutated := strings.Replace(string(real), m.from, m.to, 1)
			if mutated == string(real) {
				t.Fatalf("mutation %q did not apply", m.from)
			}
			spec, err := parseDockerfile(mutated)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(spec.problems("packages.txt"), "\n")
			if !strings.Contains(got, m.want) {
				t.Errorf("problems %q, want one containing %q", got, m.want)
			}
		})
	}
}
