// Command imagecheck compares the collector image the testbed builds without a
// registry (a docker-archive tarball from test/testbed/cmd/imagebuild) with
// what the release Dockerfile (build/collector/Dockerfile) puts in its image,
// so the two build paths cannot drift:
//
//   - both read build/collector/packages.txt: the Dockerfile installs exactly
//     that list, and every program those Debian packages ship (as dpkg -L on
//     this Debian 12 machine lists them) is in the image;
//   - the collector binary sits where the Dockerfile copies it, and the image's
//     entrypoint is the Dockerfile's ENTRYPOINT;
//   - neither apt lists nor docs or man pages are in the image.
//
// It prints the image's size and exits 1 listing every difference.
//
//	imagecheck -image ~/.cache/svctrace/images/collector.tar \
//	  -dockerfile build/collector/Dockerfile -packages build/collector/packages.txt
package main

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	image := flag.String("image", "", "docker-archive tarball of the collector image (required)")
	dockerfile := flag.String("dockerfile", "build/collector/Dockerfile", "the release Dockerfile")
	packages := flag.String("packages", "build/collector/packages.txt", "the package list both builds read")
	flag.Parse()
	if *image == "" {
		flag.Usage()
		os.Exit(2)
	}
	problems, err := run(*image, *dockerfile, *packages, dpkgList, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(os.Stderr, "FAIL: %s\n", p)
		}
		os.Exit(1)
	}
	fmt.Println("imagecheck: the testbed image matches build/collector/ (packages, binary, entrypoint, no apt lists or docs)")
}

// ListFunc lists the files a Debian package installs.
type ListFunc func(pkg string) ([]string, error)

func dpkgList(pkg string) ([]string, error) {
	out, err := exec.Command("dpkg", "-L", pkg).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("dpkg -L %s: %s", pkg, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("dpkg -L %s: %w", pkg, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n"), nil
}

func run(imagePath, dockerfilePath, packagesPath string, list ListFunc, out io.Writer) ([]string, error) {
	pkgs, err := readPackages(packagesPath)
	if err != nil {
		return nil, err
	}
	df, err := os.ReadFile(dockerfilePath)
	if err != nil {
		return nil, err
	}
	spec, err := parseDockerfile(string(df))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dockerfilePath, err)
	}
	img, err := tarball.ImageFromPath(imagePath, nil)
	if err != nil {
		return nil, fmt.Errorf("read image %s: %w", imagePath, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	files, err := imageFiles(img)
	if err != nil {
		return nil, err
	}
	var problems []string
	problems = append(problems, spec.problems(path.Base(packagesPath))...)

	if !equal(cf.Config.Entrypoint, spec.Entrypoint) {
		problems = append(problems, fmt.Sprintf("entrypoint: image has %q, Dockerfile has %q", cf.Config.Entrypoint, spec.Entrypoint))
	}
	if f, ok := files.lookup(spec.BinaryPath); !ok || f.Typeflag != tar.TypeReg {
		problems = append(problems, fmt.Sprintf("collector binary %s (where the Dockerfile copies it) is not a file in the image", spec.BinaryPath))
	}
	for _, pkg := range pkgs {
		paths, err := list(pkg)
		if err != nil {
			problems = append(problems, fmt.Sprintf("package %s: %v (install it on this machine: the testbed image is built from the installed packages)", pkg, err))
			continue
		}
		progs := programs(paths)
		if len(progs) == 0 {
			problems = append(problems, fmt.Sprintf("package %s ships no program in /usr/sbin, /usr/bin, /sbin or /bin", pkg))
		}
		var missing []string
		for _, p := range progs {
			if h, ok := files.lookup(p); !ok || h.Typeflag != tar.TypeReg {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("package %s: %d of its %d programs are not in the image: %s", pkg, len(missing), len(progs), strings.Join(missing, " ")))
		} else {
			fmt.Fprintf(out, "ok:   %-10s %d programs present\n", pkg, len(progs))
		}
	}
	// Debian makes the unsuffixed iptables names with update-alternatives in
	// the Dockerfile image; a registry-free image must create them itself.
	if contains(pkgs, "iptables") {
		for _, alt := range iptablesAlternatives {
			if h, ok := files.lookup(alt); !ok || h.Typeflag != tar.TypeReg {
				problems = append(problems, fmt.Sprintf("%s (the iptables alternative the collector runs) is not in the image", alt))
			}
		}
	}
	for _, dir := range []string{"usr/share/doc", "usr/share/man", "usr/share/info", "var/lib/apt/lists"} {
		if n := files.under(dir); n > 0 {
			problems = append(problems, fmt.Sprintf("%d files under /%s: the image must not carry them", n, dir))
		}
	}
	size, err := compressedSize(img)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "size: %d files, %.1f MiB uncompressed, %.1f MiB compressed layers\n",
		files.regular, float64(files.bytes)/(1<<20), float64(size)/(1<<20))
	return problems, nil
}

// iptablesAlternatives are the names update-alternatives gives the iptables
// package's programs in Debian 12 (nft variant by default).
var iptablesAlternatives = []string{
	"/usr/sbin/iptables", "/usr/sbin/iptables-save", "/usr/sbin/iptables-restore",
	"/usr/sbin/ip6tables", "/usr/sbin/ip6tables-save", "/usr/sbin/ip6tables-restore",
}

// readPackages reads packages.txt: one package a line, # comments.
func readPackages(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pkgs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(strings.SplitN(sc.Text(), "#", 2)[0])
		if line != "" {
			pkgs = append(pkgs, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("%s lists no package", p)
	}
	return pkgs, nil
}

// DockerfileSpec is what the release Dockerfile says about the final image.
type DockerfileSpec struct {
	Entrypoint []string
	BinaryPath string // where COPY --from=build puts the collector
	// Installs are the argument lists of every apt-get install in the final stage.
	Installs []string
	// Removes are the paths the final stage deletes.
	Removes []string
}

var (
	entrypointRe = regexp.MustCompile(`(?m)^ENTRYPOINT\s+(\[.*\])\s*$`)
	copyBinRe    = regexp.MustCompile(`(?m)^COPY\s+--from=\S+\s+\S*svctrace-collector\s+(\S+)\s*$`)
	installRe    = regexp.MustCompile(`apt-get\s+install\s+([^;&\\\n]*(?:\\\n[^;&\\\n]*)*)`)
	rmRe         = regexp.MustCompile(`rm\s+-rf\s+([^;&]*)`)
)

func parseDockerfile(s string) (DockerfileSpec, error) {
	var spec DockerfileSpec
	stages := regexp.MustCompile(`(?m)^FROM\s`).Split(s, -1)
	final := stages[len(stages)-1]
	m := entrypointRe.FindStringSubmatch(final)
	if m == nil {
		return spec, errors.New("no exec-form ENTRYPOINT in the final stage")
	}
	if err := json.Unmarshal([]byte(m[1]), &spec.Entrypoint); err != nil {
		return spec, fmt.Errorf("ENTRYPOINT %s: %w", m[1], err)
	}
	c := copyBinRe.FindStringSubmatch(final)
	if c == nil {
		return spec, errors.New("no COPY --from=... svctrace-collector in the final stage")
	}
	spec.BinaryPath = c[1]
	joined := strings.ReplaceAll(final, "\\\n", " ")
	for _, im := range installRe.FindAllStringSubmatch(joined, -1) {
		spec.Installs = append(spec.Installs, strings.TrimSpace(im[1]))
	}
	for _, rm := range rmRe.FindAllStringSubmatch(joined, -1) {
		spec.Removes = append(spec.Removes, strings.Fields(rm[1])...)
	}
	return spec, nil
}

// problems says where the Dockerfile itself strays from "exactly packages.txt,
// no lists, no docs".
func (d DockerfileSpec) problems(packagesFile string) []string {
	var p []string
	if len(d.Installs) != 1 {
		p = append(p, fmt.Sprintf("Dockerfile: want exactly one apt-get install (of %s), found %d", packagesFile, len(d.Installs)))
	}
	for _, args := range d.Installs {
		if !strings.Contains(args, packagesFile) {
			p = append(p, fmt.Sprintf("Dockerfile: apt-get install %q does not install from %s", args, packagesFile))
		}
		if !strings.Contains(args, "--no-install-recommends") {
			p = append(p, "Dockerfile: apt-get install without --no-install-recommends pulls in more than the list")
		}
		rest := regexp.MustCompile(`\$\([^)]*\)|--?[a-z-]+|-y`).ReplaceAllString(args, "")
		if extra := strings.Fields(rest); len(extra) > 0 {
			p = append(p, fmt.Sprintf("Dockerfile: apt-get install names packages outside %s: %v", packagesFile, extra))
		}
	}
	for _, want := range []string{"/var/lib/apt/lists/*", "/usr/share/doc", "/usr/share/man"} {
		if !contains(d.Removes, want) {
			p = append(p, fmt.Sprintf("Dockerfile: the final stage does not remove %s", want))
		}
	}
	return p
}

// programs picks the executables from a dpkg -L listing, in the usr-merged
// spelling (/sbin/x is /usr/sbin/x).
func programs(paths []string) []string {
	var out []string
	for _, p := range paths {
		dir, name := path.Split(p)
		switch dir {
		case "/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/":
		default:
			continue
		}
		if name == "" {
			continue
		}
		out = append(out, "/usr/"+strings.TrimPrefix(strings.TrimPrefix(dir, "/usr/"), "/")+name)
	}
	sort.Strings(out)
	return out
}

// fileSet is the flattened file system of an image.
type fileSet struct {
	entries map[string]*tar.Header
	regular int
	bytes   int64
}

func imageFiles(img v1.Image) (*fileSet, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	fs := &fileSet{entries: map[string]*tar.Header{}}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read image layers: %w", err)
		}
		name := path.Clean("/" + h.Name)
		fs.entries[name] = h
		if h.Typeflag == tar.TypeReg {
			fs.regular++
			fs.bytes += h.Size
		}
	}
	return fs, nil
}

// lookup finds p, following symlinks in its directories (a usr-merged image
// has /sbin -> usr/sbin) and at its end.
func (fs *fileSet) lookup(p string) (*tar.Header, bool) {
	p = path.Clean(p)
	for range 40 {
		h, ok := fs.resolveDirs(p)
		if !ok {
			return nil, false
		}
		if h.Typeflag != tar.TypeSymlink {
			return h, true
		}
		target := h.Linkname
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(h.Name), target)
		}
		p = path.Clean("/" + target)
	}
	return nil, false
}

func (fs *fileSet) resolveDirs(p string) (*tar.Header, bool) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for i, part := range parts {
		next := path.Join(cur, part)
		h, ok := fs.entries[next]
		if !ok {
			return nil, false
		}
		if i < len(parts)-1 && h.Typeflag == tar.TypeSymlink {
			target := h.Linkname
			if !path.IsAbs(target) {
				target = path.Join(cur, target)
			}
			next = path.Clean("/" + target)
		}
		cur = next
	}
	h, ok := fs.entries[cur]
	if !ok {
		return nil, false
	}
	// Keep the name the entry was found under, for relative link targets.
	hc := *h
	hc.Name = cur
	return &hc, true
}

func (fs *fileSet) under(dir string) int {
	prefix := "/" + strings.Trim(dir, "/") + "/"
	n := 0
	for name, h := range fs.entries {
		if strings.HasPrefix(name, prefix) && h.Typeflag == tar.TypeReg {
			n++
		}
	}
	return n
}

func compressedSize(img v1.Image) (int64, error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			return 0, err
		}
		total += s
	}
	return total, nil
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
