// Package release holds the release checks that need no goreleaser run: the
// krew manifest template, the release bot's copy of it, the render script and
// .goreleaser.yaml must agree on every archive. `make dist` and
// `make krew-check` then check the same against real archives.
package release

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const root = "../.."

var platforms = []struct{ os, arch string }{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

func archiveName(os, arch string) string {
	if os == "windows" {
		return fmt.Sprintf("kubectl-svctrace_%s_%s.zip", os, arch)
	}
	return fmt.Sprintf("kubectl-svctrace_%s_%s.tar.gz", os, arch)
}

func read(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKrewYamlIsTheTemplate: krew-release-bot reads .krew.yaml; it must be the
// template krew-check validates and installs.
func TestKrewYamlIsTheTemplate(t *testing.T) {
	if !bytes.Equal(read(t, ".krew.yaml"), read(t, "krew/svctrace.yaml.tmpl")) {
		t.Fatal(".krew.yaml differs from krew/svctrace.yaml.tmpl: cp krew/svctrace.yaml.tmpl .krew.yaml")
	}
}

type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		ShortDescription string `json:"shortDescription"`
		Homepage         string `json:"homepage"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

// fakeDist writes checksums.txt and metadata.json as goreleaser does, for the
// given archives, each with a distinct sha256.
func fakeDist(t *testing.T, archives []string) (dir string, sums map[string]string) {
	t.Helper()
	dir = t.TempDir()
	sums = map[string]string{}
	var b strings.Builder
	for i, a := range archives {
		// Distinct sums; the first is all digits, which YAML would read as a number unquoted.
		sum := fmt.Sprintf("%064x", sha256.Sum256([]byte(a)))
		if i == 0 {
			sum = strings.Repeat("0", 63) + "1"
		}
		sums[a] = sum
		fmt.Fprintf(&b, "%s  %s\n", sum, a)
	}
	if err := os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	meta := `{"project_name":"kubectl-svctrace","tag":"v0.0.0","previous_tag":"","version":"1.2.3","commit":"abc","date":"2026-01-01T00:00:00Z","runtime":{"goos":"linux","goarch":"amd64"}}`
	if err := os.WriteFile(filepath.Join(dir, "metadata.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, sums
}

func render(dist string, args ...string) ([]byte, error) {
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "krew/render.sh"), "-d", dist}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, stderr.String())
	}
	return out, nil
}

func TestRenderFillsEveryPlatform(t *testing.T) {
	var archives []string
	for _, p := range platforms {
		archives = append(archives, archiveName(p.os, p.arch))
	}
	// The collector archives and a stray file are in checksums.txt too.
	dist, sums := fakeDist(t, append(archives, "svctrace-collector_linux_amd64.tar.gz"))

	for _, tc := range []struct{ name, base, wantPrefix string }{
		{"release URLs", "", "https://github.com/svctrace/kubectl-svctrace/releases/download/v1.2.3/"},
		{"loopback base", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			if tc.base != "" {
				args = []string{"-b", tc.base}
			}
			out, err := render(dist, args...)
			if err != nil {
				t.Fatal(err)
			}
			var m manifest
			if err := yaml.UnmarshalStrict(out, &m); err != nil {
				t.Fatalf("rendered manifest is not a krew Plugin: %v\n%s", err, out)
			}
			if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "svctrace" {
				t.Errorf("apiVersion/kind/name = %s/%s/%s", m.APIVersion, m.Kind, m.Metadata.Name)
			}
			if m.Spec.Version != "v1.2.3" {
				t.Errorf("version = %q, want v1.2.3 (v + metadata.json's version)", m.Spec.Version)
			}
			if len(m.Spec.Platforms) != len(platforms) {
				t.Fatalf("%d platforms, want %d", len(m.Spec.Platforms), len(platforms))
			}
			seen := map[string]bool{}
			for _, p := range m.Spec.Platforms {
				os, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
				key := os + "/" + arch
				if seen[key] {
					t.Errorf("platform %s twice", key)
				}
				seen[key] = true
				want := archiveName(os, arch)
				if p.URI != tc.wantPrefix+want {
					t.Errorf("%s uri = %q, want %q", key, p.URI, tc.wantPrefix+want)
				}
				if p.Sha256 != sums[want] {
					t.Errorf("%s sha256 = %q, want %q (from checksums.txt)", key, p.Sha256, sums[want])
				}
				bin := "kubectl-svctrace"
				if os == "windows" {
					bin += ".exe"
				}
				if p.Bin != bin {
					t.Errorf("%s bin = %q, want %q", key, p.Bin, bin)
				}
				var from []string
				for _, f := range p.Files {
					from = append(from, f.From)
				}
				slices.Sort(from)
				if wantFrom := []string{"LICENSE", bin, "kubectl_complete-svctrace"}; !slices.Equal(from, sortCopy(wantFrom)) {
					t.Errorf("%s files from %q, want %q", key, from, sortCopy(wantFrom))
				}
			}
			for _, p := range platforms {
				if !seen[p.os+"/"+p.arch] {
					t.Errorf("platform %s/%s missing", p.os, p.arch)
				}
			}
			if bytes.Contains(out, []byte("{{")) {
				t.Errorf("template braces left in the rendered manifest:\n%s", out)
			}
		})
	}
}

func sortCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func TestRenderFailsWithoutAnArchive(t *testing.T) {
	var archives []string
	for _, p := range platforms[:5] { // windows/arm64 not built
		archives = append(archives, archiveName(p.os, p.arch))
	}
	dist, _ := fakeDist(t, archives)
	_, err := render(dist, "-o", filepath.Join(t.TempDir(), "svctrace.yaml"))
	if err == nil || !strings.Contains(err.Error(), "kubectl-svctrace_windows_arm64.zip is not in") {
		t.Fatalf("render with windows/arm64 missing: err = %v, want it to name the missing archive", err)
	}
}

type goreleaserConfig struct {
	Version     int    `json:"version"`
	ProjectName string `json:"project_name"`
	Env         []string
	Builds      []struct {
		ID      string   `json:"id"`
		Main    string   `json:"main"`
		Binary  string   `json:"binary"`
		Flags   []string `json:"flags"`
		Ldflags []string `json:"ldflags"`
		Goos    []string `json:"goos"`
		Goarch  []string `json:"goarch"`
	} `json:"builds"`
	Archives []struct {
		ID              string   `json:"id"`
		IDs             []string `json:"ids"`
		Formats         []string `json:"formats"`
		NameTemplate    string   `json:"name_template"`
		FormatOverrides []struct {
			Goos    string   `json:"goos"`
			Formats []string `json:"formats"`
		} `json:"format_overrides"`
		Files []string `json:"files"`
	} `json:"archives"`
}

// TestGoreleaserMakesTheArchivesKrewNames: the archives .goreleaser.yaml
// produces are exactly the ones the krew template downloads, with the
// LICENSE and the completion script, from CGO-free -trimpath builds stamped
// with version, commit and date.
func TestGoreleaserMakesTheArchivesKrewNames(t *testing.T) {
	var c goreleaserConfig
	if err := yaml.Unmarshal(read(t, ".goreleaser.yaml"), &c); err != nil {
		t.Fatal(err)
	}
	if c.Version != 2 {
		t.Errorf("version: %d, want 2", c.Version)
	}
	if !slices.Contains(c.Env, "CGO_ENABLED=0") {
		t.Errorf("env %q lacks CGO_ENABLED=0", c.Env)
	}
	builds := map[string]int{}
	for i, b := range c.Builds {
		builds[b.ID] = i
		if !slices.Contains(b.Flags, "-trimpath") {
			t.Errorf("build %s: flags %q lack -trimpath", b.ID, b.Flags)
		}
		ld := strings.Join(b.Ldflags, " ")
		for _, x := range []string{"-s -w", "-X main.version={{.Version}}", "-X main.commit={{.Commit}}", "-X main.date={{.Date}}"} {
			if !strings.Contains(ld, x) {
				t.Errorf("build %s: ldflags %q lack %q", b.ID, ld, x)
			}
		}
	}
	plugin, ok := builds["kubectl-svctrace"]
	if !ok {
		t.Fatal("no kubectl-svctrace build")
	}
	pb := c.Builds[plugin]
	if pb.Main != "./cmd/kubectl-svctrace" || !slices.Equal(sortCopy(pb.Goos), []string{"darwin", "linux", "windows"}) || !slices.Equal(sortCopy(pb.Goarch), []string{"amd64", "arm64"}) {
		t.Errorf("kubectl-svctrace build: main %s goos %q goarch %q", pb.Main, pb.Goos, pb.Goarch)
	}
	if cb := c.Builds[builds["svctrace-collector"]]; cb.ID != "svctrace-collector" || !slices.Equal(cb.Goos, []string{"linux"}) || !slices.Equal(sortCopy(cb.Goarch), []string{"amd64", "arm64"}) {
		t.Errorf("svctrace-collector build: %+v, want linux amd64+arm64", cb)
	}

	// Expand the plugin archive's name template for each built platform.
	var produced []string
	for _, a := range c.Archives {
		if !slices.Contains(a.IDs, "kubectl-svctrace") {
			continue
		}
		for _, f := range []string{"LICENSE", "kubectl_complete-svctrace"} {
			if !slices.Contains(a.Files, f) {
				t.Errorf("archive %s lacks %s", a.ID, f)
			}
		}
		for _, goos := range pb.Goos {
			for _, goarch := range pb.Goarch {
				format := a.Formats[0]
				for _, o := range a.FormatOverrides {
					if o.Goos == goos {
						format = o.Formats[0]
					}
				}
				name := strings.NewReplacer("{{ .ProjectName }}", c.ProjectName, "{{ .Os }}", goos, "{{ .Arch }}", goarch).Replace(a.NameTemplate)
				if strings.Contains(name, "{{") {
					t.Fatalf("archive name template %q has fields this test does not know; krew's URLs must follow it", a.NameTemplate)
				}
				produced = append(produced, name+"."+format)
			}
		}
	}
	slices.Sort(produced)

	uriRe := regexp.MustCompile(`addURIAndSha "[^"]*/([^"/]+)" \.TagName`)
	var fetched []string
	for _, m := range uriRe.FindAllStringSubmatch(string(read(t, "krew/svctrace.yaml.tmpl")), -1) {
		fetched = append(fetched, m[1])
	}
	slices.Sort(fetched)
	if !slices.Equal(produced, fetched) {
		t.Errorf("goreleaser produces %q\nkrew template fetches %q", produced, fetched)
	}
}

func TestCompletionScript(t *testing.T) {
	p := filepath.Join(root, "kubectl_complete-svctrace")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s is not executable (%v): kubectl only runs executables", p, fi.Mode())
	}
	if !regexp.MustCompile(`(?m)^exec kubectl-svctrace __complete "\$@"$`).Match(read(t, "kubectl_complete-svctrace")) {
		t.Errorf("kubectl_complete-svctrace does not exec kubectl-svctrace __complete \"$@\"")
	}
}
