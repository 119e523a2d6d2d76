// Package subgraphs_test checks that the committed gqlgen code of every subgraph
// is what `make generate` would write from schema/*.graphqls today.
package subgraphs_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// skipDirs are not part of the Go module's build.
var skipDirs = map[string]bool{".git": true, ".cache": true, "bin": true, "data": true, "node_modules": true}

func TestGeneratedCodeIsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerating with gqlgen takes a while; skipped in -short mode")
	}
	root, _ := filepath.Abs("..")
	copyRoot := t.TempDir()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if skipDirs[d.Name()] && path != root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a symlink to a shared directory (.cache in a worktree)
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(copyRoot, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(copyRoot, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"catalog", "users", "venues", "payments", "matching"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(copyRoot, "subgraphs", name)
			cmd := exec.Command("go", "tool", "gqlgen", "generate", "--config", "gqlgen.yml")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("gqlgen generate: %v\n%s", err, out)
			}
			compareTrees(t, filepath.Join(root, "subgraphs", name, "graph"), filepath.Join(dir, "graph"))
		})
	}
}

func compareTrees(t *testing.T, committed, fresh string) {
	t.Helper()
	files := map[string]bool{}
	for _, dir := range []string{committed, fresh} {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				rel, _ := filepath.Rel(dir, path)
				files[rel] = true
			}
			return nil
		})
	}
	for rel := range files {
		a, errA := os.ReadFile(filepath.Join(committed, rel))
		b, errB := os.ReadFile(filepath.Join(fresh, rel))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s is stale: run `make generate` and commit the result", filepath.Join(filepath.Base(filepath.Dir(committed)), "graph", rel))
		}
	}
}
