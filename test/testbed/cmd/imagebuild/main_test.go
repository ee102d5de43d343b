package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func writeTree(t *testing.T, root string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr", "bin"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr", "bin", "tool"), []byte("#!/bin/true\n"), 0o755))
	must(os.WriteFile(filepath.Join(root, "etc-file"), []byte("x"), 0o600))
	must(os.Symlink("usr/bin", filepath.Join(root, "bin")))
}

// TestReproducible: the same tree gives byte-identical tarballs even when the
// files' mtimes differ, and the layer is normalised (0:0, zero mtimes,
// symlinks and modes kept).
func TestReproducible(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeTree(t, a)
	writeTree(t, b)
	if err := os.Chtimes(filepath.Join(b, "etc-file"), timeZero().AddDate(30, 0, 0), timeZero().AddDate(30, 0, 0)); err != nil {
		t.Fatal(err)
	}
	outA, outB := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	for _, c := range []struct{ root, out string }{{a, outA}, {b, outB}} {
		if err := build(c.root, "svctrace.local/test:v1", c.out, []string{"/usr/bin/tool"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	da, _ := os.ReadFile(outA)
	db, _ := os.ReadFile(outB)
	if !bytes.Equal(da, db) {
		t.Fatal("same tree, different tarballs")
	}

	tag, _ := name.NewTag("svctrace.local/test:v1")
	img, err := tarball.ImageFromPath(outA, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.Entrypoint[0] != "/usr/bin/tool" || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("config: %+v", cf.Config)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("want one layer, have %d (%v)", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != 0 {
			t.Errorf("%s: uid %d gid %d mtime %v", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		seen[h.Name] = h
	}
	if h := seen["bin"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "usr/bin" {
		t.Errorf("symlink bin not kept: %+v", h)
	}
	if h := seen["usr/bin/tool"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("executable mode not kept: %+v", h)
	}
	if h := seen["etc-file"]; h == nil || h.Mode&0o777 != 0o600 {
		t.Errorf("file mode not kept: %+v", h)
	}
}
