package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/bundle"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestSaveThenAnalyze: --save writes a bundle beside the printed result;
// analyze, on no cluster at all, prints the same result and exits the same.
func TestSaveThenAnalyze(t *testing.T) {
	for _, tt := range []struct {
		name  string
		ready bool
		want  int
	}{
		{"healthy", true, ExitOK},
		{"no ready endpoint", false, ExitLayerFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "incident")
			out, errOut, run := testCmd(objects(tt.ready))
			err := run("web", "--no-node", "-o", "json", "--save", dir)
			if code := ExitCode(err); code != tt.want {
				t.Fatalf("trace exit %d (%v), want %d", code, err, tt.want)
			}
			if !strings.Contains(errOut.String(), "saved the trace to "+dir) {
				t.Errorf("stderr: %q", errOut)
			}
			if !bundle.IsBundle(dir) {
				t.Fatal("no bundle written")
			}
			live := out.String()

			// No objects: analyze must not read the cluster.
			out, errOut, run = testCmd(nil)
			err = run("analyze", dir, "-o", "json")
			if code := ExitCode(err); code != tt.want {
				t.Fatalf("analyze exit %d (%v), want %d", code, err, tt.want)
			}
			if out.String() != live {
				t.Errorf("analyze printed\n%s\nthe trace printed\n%s", out, live)
			}
			if errOut.Len() != 0 {
				t.Errorf("analyze wrote to stderr: %q", errOut)
			}
			saved, err := os.ReadFile(filepath.Join(dir, bundle.ResultFile))
			if err != nil || string(saved) != live {
				t.Errorf("result.json differs from the printed result (%v)", err)
			}
		})
	}
}

func TestSaveRefusesAnExistingBundle(t *testing.T) {
	dir := t.TempDir()
	_, _, run := testCmd(objects(true))
	if err := run("web", "--no-node", "--save", dir); err != nil {
		t.Fatal(err)
	}
	out, _, run := testCmd(objects(true))
	err := run("web", "--no-node", "--save", dir)
	if code := ExitCode(err); code != ExitUsage || !strings.Contains(err.Error(), "already holds a saved trace") {
		t.Fatalf("exit %d (%v), want a usage error", code, err)
	}
	if out.Len() != 0 {
		t.Errorf("traced anyway:\n%s", out)
	}
}

// TestAnalyzeSaysWhenJudgementChanged: a bundle whose saved result says
// otherwise than this build gets a note on stderr.
func TestAnalyzeSaysWhenJudgementChanged(t *testing.T) {
	dir := t.TempDir()
	_, _, run := testCmd(objects(false))
	_ = run("web", "--no-node", "--save", dir)
	path := filepath.Join(dir, bundle.ResultFile)
	data, _ := os.ReadFile(path)
	var r report.ServiceTrace
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	r.Verdict.Status, r.Verdict.Code = report.StatusPass, ""
	data, _ = json.Marshal(r)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, run := testCmd(nil)
	err := run("analyze", dir)
	if ExitCode(err) != ExitLayerFailed || !strings.Contains(errOut.String(), "judged this trace pass") || !strings.Contains(errOut.String(), "judges it fail") {
		t.Errorf("exit %d, stderr %q", ExitCode(err), errOut)
	}
}

func TestAnalyzeErrors(t *testing.T) {
	notBundle := t.TempDir()
	file := filepath.Join(notBundle, "x.json")
	_ = os.WriteFile(file, []byte("{}"), 0o600)
	for _, tt := range []struct {
		args []string
		want int
		msg  string
	}{
		{[]string{"analyze"}, ExitUsage, "one DIR"},
		{[]string{"analyze", filepath.Join(notBundle, "nope")}, ExitUsage, "not a directory"},
		{[]string{"analyze", file}, ExitUsage, "not a directory"},
		{[]string{"analyze", notBundle}, ExitError, "not a saved trace"},
		{[]string{"analyze", notBundle, "-o", "table"}, ExitUsage, "invalid --output"},
		{[]string{"diff", notBundle, file, "-o", "svg"}, ExitUsage, "invalid --output"},
		{[]string{"diff", notBundle}, ExitUsage, "BEFORE and AFTER"},
		{[]string{"diff", file, file}, ExitError, "apiVersion"},
		{[]string{"diff", notBundle, file}, ExitError, "not a saved trace"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, run := testCmd(nil)
			err := run(tt.args...)
			if code := ExitCode(err); code != tt.want || err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("exit %d (%v), want %d with %q", code, err, tt.want, tt.msg)
			}
		})
	}
}

// TestDiffBundlesAndResults: a healthy trace and a faulty one, saved and
// printed; diff names the fault's findings whichever form it is given, and
// nothing when a trace is compared with itself.
func TestDiffBundlesAndResults(t *testing.T) {
	tmp := t.TempDir()
	save := func(name string, ready bool) (dir, file string) {
		dir, file = filepath.Join(tmp, name), filepath.Join(tmp, name+".json")
		out, _, run := testCmd(objects(ready))
		_ = run("web", "--no-node", "-o", "json", "--save", dir)
		if err := os.WriteFile(file, out.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir, file
	}
	beforeDir, beforeFile := save("before", true)
	afterDir, afterFile := save("after", false)

	var byForm []string
	for _, pair := range [][2]string{{beforeDir, afterDir}, {beforeFile, afterFile}, {beforeDir, afterFile}} {
		out, _, run := testCmd(nil)
		if err := run("diff", pair[0], pair[1], "-o", "json"); err != nil {
			t.Fatalf("diff %s %s: %v", pair[0], pair[1], err)
		}
		var d report.TraceDiff
		if err := json.Unmarshal(out.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Added) == 0 || len(d.Gone) != 0 || d.After.Verdict.Status != report.StatusFail || d.After.Source != pair[1] {
			t.Errorf("diff %s %s: %+v", pair[0], pair[1], d)
		}
		var codes []string
		for _, f := range d.Added {
			codes = append(codes, f.Code)
		}
		byForm = append(byForm, strings.Join(codes, ","))
	}
	if byForm[0] != byForm[1] || byForm[1] != byForm[2] {
		t.Errorf("added findings depend on the form of the traces: %q", byForm)
	}

	out, _, run := testCmd(nil)
	if err := run("diff", afterDir, afterFile, "--color", "never"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "default/web: no difference") {
		t.Errorf("a trace compared with itself:\n%s", out)
	}
	out, _, run = testCmd(nil)
	if err := run("diff", beforeDir, afterDir); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Added") || !strings.Contains(out.String(), "+ [FAIL] endpoints") {
		t.Errorf("text diff:\n%s", out)
	}
}
