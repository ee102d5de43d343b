// Package release holds the release checks that need no goreleaser run:
// .goreleaser.yaml builds the six plugin archives krew installs and has its
// krews pipe write the one krew manifest, from those archives only. `make dist`
// and `make krew-check` then check the archives and the manifest goreleaser
// actually wrote.
package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
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

func sortCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
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
	Release struct {
		GitHub struct {
			Owner string `json:"owner"`
			Name  string `json:"name"`
		} `json:"github"`
		ExtraFiles []struct {
			Glob         string `json:"glob"`
			NameTemplate string `json:"name_template"`
		} `json:"extra_files"`
	} `json:"release"`
	Krews []krewsConfig `json:"krews"`
}

// krewsConfig is one entry of .goreleaser.yaml's krews, with every field
// goreleaser v2's config.Krew has that svctrace may set.
type krewsConfig struct {
	Name             string   `json:"name"`
	IDs              []string `json:"ids"`
	SkipUpload       any      `json:"skip_upload"`
	Homepage         string   `json:"homepage"`
	ShortDescription string   `json:"short_description"`
	Description      string   `json:"description"`
	Caveats          string   `json:"caveats"`
	URLTemplate      string   `json:"url_template"`
	Repository       any      `json:"repository"`
	CommitAuthor     any      `json:"commit_author"`
	Goamd64          string   `json:"goamd64"`
}

func goreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	var c goreleaserConfig
	if err := yaml.Unmarshal(read(t, ".goreleaser.yaml"), &c); err != nil {
		t.Fatal(err)
	}
	// The krews entries strictly, so a misspelt field fails here.
	var top struct {
		Krews []json.RawMessage `json:"krews"`
	}
	if err := yaml.Unmarshal(read(t, ".goreleaser.yaml"), &top); err != nil {
		t.Fatal(err)
	}
	for i, raw := range top.Krews {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&krewsConfig{}); err != nil {
			t.Errorf("krews[%d]: %v", i, err)
		}
	}
	return c
}

// TestGoreleaserMakesThePluginArchives: the plugin archives .goreleaser.yaml
// produces are one per platform under the names README's install steps and
// krew-check.sh spell, with the LICENSE and the completion script, from
// CGO-free -trimpath builds stamped with version, commit and date.
func TestGoreleaserMakesThePluginArchives(t *testing.T) {
	c := goreleaser(t)
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

	var want []string
	for _, p := range platforms {
		want = append(want, archiveName(p.os, p.arch))
	}
	slices.Sort(want)
	if !slices.Equal(produced, want) {
		t.Errorf("goreleaser produces plugin archives %q\nwant %q", produced, want)
	}
}

// TestKrewsPipeWritesTheManifest: the krews pipe is the one source of the krew
// manifest. It writes plugin svctrace from the plugin's archives only (one
// binary each, so one platform each; the collector's linux archives would add
// a second linux/amd64 and linux/arm64), never pushes it anywhere itself, and
// carries what krew-index shows users.
func TestKrewsPipeWritesTheManifest(t *testing.T) {
	c := goreleaser(t)
	if len(c.Krews) != 1 {
		t.Fatalf("%d krews entries, want 1", len(c.Krews))
	}
	k := c.Krews[0]
	if k.Name != "svctrace" {
		t.Errorf("krews name %q, want svctrace (kubectl svctrace, dist/krew/svctrace.yaml)", k.Name)
	}
	if !slices.Equal(k.IDs, []string{"kubectl-svctrace"}) {
		t.Errorf("krews ids %q, want [kubectl-svctrace]", k.IDs)
	}
	for _, a := range c.Archives {
		if slices.Contains(k.IDs, a.ID) && !slices.Equal(a.IDs, []string{"kubectl-svctrace"}) {
			t.Errorf("archive %s builds %q; krew allows one binary per archive, kubectl-svctrace", a.ID, a.IDs)
		}
	}
	if fmt.Sprint(k.SkipUpload) != "true" {
		t.Errorf("krews skip_upload %v, want true: the release job hands dist/krew/svctrace.yaml to krew-release-bot", k.SkipUpload)
	}
	// krew-release-bot runs once the draft is published, from the release's copy.
	attached := false
	for _, f := range c.Release.ExtraFiles {
		attached = attached || (filepath.Clean(f.Glob) == "dist/krew/"+k.Name+".yaml" && f.NameTemplate == "")
	}
	if !attached {
		t.Errorf("release extra_files %+v lack dist/krew/%s.yaml: the release job takes the manifest from the release", c.Release.ExtraFiles, k.Name)
	}
	if k.Repository != nil {
		t.Errorf("krews repository %v: goreleaser must not push the manifest (skip_upload)", k.Repository)
	}
	// The default url_template is the GitHub release download URL of .release.github.
	if k.URLTemplate != "" {
		t.Errorf("krews url_template %q: leave it to the release's GitHub URL", k.URLTemplate)
	}
	if home := "https://github.com/" + c.Release.GitHub.Owner + "/" + c.Release.GitHub.Name; k.Homepage != home {
		t.Errorf("krews homepage %q, want %q (the release repository; krew-index ties the plugin to it)", k.Homepage, home)
	}
	if k.ShortDescription == "" || len(k.ShortDescription) > 255 || strings.Contains(k.ShortDescription, "\n") {
		t.Errorf("krews short_description %q: want one line, at most 255 characters", k.ShortDescription)
	}
	if !strings.Contains(k.Description, "collector Pod") {
		t.Errorf("krews description does not say a collector Pod runs on nodes:\n%s", k.Description)
	}
	for _, w := range []string{"NET_ADMIN", "NET_RAW", "RBAC"} {
		if !strings.Contains(k.Caveats, w) {
			t.Errorf("krews caveats do not mention %s:\n%s", w, k.Caveats)
		}
	}
	if strings.Contains(k.Description+k.Caveats+k.ShortDescription, "{{") {
		t.Errorf("krews texts hold template braces; goreleaser would expand them")
	}
}

// TestNoHandKeptKrewManifest: nothing in the tree competes with the generated
// manifest.
func TestNoHandKeptKrewManifest(t *testing.T) {
	for _, p := range []string{".krew.yaml", "krew/svctrace.yaml", "krew/svctrace.yaml.tmpl"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s exists; the krew manifest is goreleaser's dist/krew/svctrace.yaml only (krew/README.md)", p)
		}
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
