// Command imagebuild packs a root filesystem directory into a single-layer
// container image and writes it as a docker-archive tarball that
// `ctr images import` accepts. The testbed has no registry, so every image it
// runs (pause, echo, CoreDNS, the svctrace collector) is made this way.
//
// The output is reproducible: entries are sorted, owned by 0:0 and carry zero
// mtimes, and the config has no creation time, so the same inputs give the
// same image digest.
//
//	imagebuild -root DIR -tag svctrace.local/echo:v1 -entrypoint /echo -out echo.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var env listFlag
	root := flag.String("root", "", "root filesystem directory to pack (required)")
	tag := flag.String("tag", "", "image reference, e.g. svctrace.local/echo:v1 (required)")
	out := flag.String("out", "", "docker-archive tarball to write (required)")
	entrypoint := flag.String("entrypoint", "", "entrypoint, space separated")
	flag.Var(&env, "env", "KEY=VALUE for the image config (repeatable)")
	flag.Parse()
	if *root == "" || *tag == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := build(*root, *tag, *out, strings.Fields(*entrypoint), env); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func build(root, tag, out string, entrypoint, env []string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	layerTar, err := tarTree(root)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture = "amd64"
	cf.OS = "linux"
	cf.Created = v1.Time{Time: timeZero()}
	cf.Config.Entrypoint = entrypoint
	cf.Config.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	cf.Config.WorkingDir = "/"
	cf.History = nil
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	d, _ := img.Digest()
	fmt.Printf("%s\t%s\t%d bytes uncompressed\t%s\n", tag, d, len(layerTar), out)
	return nil
}

// tarTree walks root in lexical order and writes a tar of it with normalised
// ownership and times. Hard links are stored as separate files.
func tarTree(root string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = timeZero(), time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		hdr.PAXRecords = nil
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// timeZero is the only time the image carries, so rebuilds are byte-identical.
func timeZero() time.Time { return time.Unix(0, 0).UTC() }
