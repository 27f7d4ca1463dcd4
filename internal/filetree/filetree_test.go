package filetree_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/filetree"
)

// tree makes root with a file, a nested directory, an executable and a relative link.
func tree(t *testing.T, root string) {
	t.Helper()
	for p, data := range map[string]string{"a.yml": "cluster.name: siem\n", "sub/b.conf": "x=1\n", "sub/run.sh": "#!/bin/sh\n"} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "sub/run.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/b.conf", filepath.Join(root, "link.conf")); err != nil {
		t.Fatal(err)
	}
}

func TestCopyKeepsTheTreeAndCompareFindsAChange(t *testing.T) {
	ctx := context.Background()
	src, dst := filepath.Join(t.TempDir(), "src"), filepath.Join(t.TempDir(), "dst")
	tree(t, src)
	var seen int64
	man, err := filetree.Copy(ctx, src, dst, func(done int64) { seen = done })
	if err != nil {
		t.Fatal(err)
	}
	if man.Files != 3 || seen != man.Bytes {
		t.Fatalf("copied %d files/%d bytes, progress said %d", man.Files, man.Bytes, seen)
	}
	got, err := filetree.Scan(ctx, dst, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := filetree.Compare(man, got); err != nil {
		t.Fatalf("the copy differs from its manifest: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "sub/run.sh")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("mode not kept: %v %v", fi.Mode(), err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "link.conf")); err != nil || l != "sub/b.conf" {
		t.Fatalf("link not kept: %q %v", l, err)
	}
	if _, err := filetree.Copy(ctx, src, dst, nil); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("copy over an existing destination: %v", err)
	}

	if err := os.WriteFile(filepath.Join(dst, "a.yml"), []byte("cluster.name: evil\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dst, "sub/b.conf")); err != nil {
		t.Fatal(err)
	}
	got, err = filetree.Scan(ctx, dst, true)
	if err != nil {
		t.Fatal(err)
	}
	err = filetree.Compare(man, got)
	if err == nil || !strings.Contains(err.Error(), "a.yml content differs") || !strings.Contains(err.Error(), "sub/b.conf missing") {
		t.Fatalf("Compare = %v, want the changed and the missing file named", err)
	}
}

func TestArchiveRoundTripAndDamage(t *testing.T) {
	ctx := context.Background()
	src, dir := filepath.Join(t.TempDir(), "etc"), t.TempDir()
	tree(t, src)
	absent := filepath.Join(t.TempDir(), "never")
	man, sum, missing, err := filetree.SaveArchive(ctx, dir, "configs.tar.gz", "configs.manifest.json", []string{src, absent}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 1 || missing[0] != absent || len(sum) != 64 || man.Files != 3 {
		t.Fatalf("missing %v, sum %q, %d files", missing, sum, man.Files)
	}
	sums, err := filetree.ReadSums(dir)
	if err != nil || sums["configs.tar.gz"] != sum || sums["configs.manifest.json"] == "" {
		t.Fatalf("SHA256SUMS = %v, %v", sums, err)
	}
	var back filetree.Manifest
	if err := filetree.ReadJSON(filepath.Join(dir, "configs.manifest.json"), &back); err != nil || back.Files != 3 {
		t.Fatalf("manifest read back: %+v %v", back, err)
	}

	// the live files change; the restore puts the archived content back
	if err := os.WriteFile(filepath.Join(src, "a.yml"), []byte("changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(src, "sub")); err != nil {
		t.Fatal(err)
	}
	n, err := filetree.ExtractArchive(ctx, filepath.Join(dir, "configs.tar.gz"), back)
	if err != nil || n != 3 {
		t.Fatalf("extract: %d files, %v", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "a.yml")); string(b) != "cluster.name: siem\n" {
		t.Fatalf("a.yml = %q after the restore", b)
	}
	if fi, err := os.Stat(filepath.Join(src, "a.yml")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("a.yml mode after the restore: %v %v", fi.Mode(), err)
	}

	// one flipped byte in the archive: the checksum names the damage
	arch := filepath.Join(dir, "configs.tar.gz")
	b, err := os.ReadFile(arch)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(arch, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := filetree.VerifySum(dir, "configs.tar.gz"); err == nil || !strings.Contains(err.Error(), "the backup is damaged") {
		t.Fatalf("VerifySum of a damaged archive = %v", err)
	}
	if err := filetree.VerifySum(dir, "other.tar.gz"); err == nil || !strings.Contains(err.Error(), "is not in") {
		t.Fatalf("VerifySum of an unlisted file = %v", err)
	}
}

func TestExtractRefusesADirectoryReplacedByALink(t *testing.T) {
	ctx := context.Background()
	src, dir, victim := filepath.Join(t.TempDir(), "etc"), t.TempDir(), t.TempDir()
	tree(t, src)
	man, _, _, err := filetree.SaveArchive(ctx, dir, "c.tar.gz", "c.json", []string{src}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(src, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(src, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a.yml"), []byte("changed\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	_, err = filetree.ExtractArchive(ctx, filepath.Join(dir, "c.tar.gz"), man)
	var le *filetree.LinkError
	if !errors.As(err, &le) || le.Path != filepath.Join(src, "sub") {
		t.Fatalf("extract through a planted link = %v, want a LinkError naming %s", err, filepath.Join(src, "sub"))
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Fatalf("the restore wrote through the link: %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "a.yml")); string(b) != "changed\n" {
		t.Fatalf("a file was written before the refusal: %q", b)
	}
}
