package compare

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// git runs git in the repository and returns its trimmed standard output.
func git(ctx context.Context, repo string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, clip(stderr.String(), 300))
	}
	return strings.TrimSpace(string(out)), nil
}

// repoRoot is the top of the git checkout holding dir.
func repoRoot(ctx context.Context, dir string) (string, error) {
	root, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("run it inside the repository: %w", err)
	}
	return root, nil
}

// resolveRef names a commit exactly: its full and short hashes.
func resolveRef(ctx context.Context, repo, ref string) (full, short string, err error) {
	full, err = git(ctx, repo, "rev-parse", "--verify", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return "", "", fmt.Errorf("-ref %q is not a commit of this repository: %w", ref, err)
	}
	short, err = git(ctx, repo, "rev-parse", "--short", full)
	return full, short, err
}

// treeLabel names the working tree: HEAD's short hash, and whether files
// differ from it (what is built includes them).
func treeLabel(ctx context.Context, repo string) string {
	head, err := git(ctx, repo, "rev-parse", "--short", "HEAD")
	if err != nil {
		return "working tree"
	}
	if st, err := git(ctx, repo, "status", "--porcelain"); err == nil && st != "" {
		return "tree " + head + "+changes"
	}
	return "tree " + head
}

// buildRef builds cmd/vitola of commit into bin from a copy of the commit's
// files (git archive: the repository's worktrees and refs are left alone),
// removed afterwards.
func buildRef(ctx context.Context, out io.Writer, repo, commit, short, work, bin string) error {
	src, err := os.MkdirTemp(work, "src-"+short+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	archive := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", commit)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	var archiveErr strings.Builder
	archive.Stderr = &archiveErr
	if err := archive.Start(); err != nil {
		return fmt.Errorf("git archive %s: %w", short, err)
	}
	if b, err := untar.CombinedOutput(); err != nil {
		archive.Process.Kill()
		archive.Wait()
		return fmt.Errorf("unpack %s: %w: %s", short, err, clip(string(b), 300))
	}
	if err := archive.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", short, err, clip(archiveErr.String(), 300))
	}
	return goBuild(ctx, out, "building vitola of "+short, src, bin)
}

// goBuild builds ./cmd/vitola of the module at dir into bin. Both sides are
// built alike and without anything of where they were built (-trimpath, no
// VCS stamp), so the same code makes the same binary, byte for byte: the
// comparison then measures the code alone (a binary laid out differently
// measured a few percent apart in every round).
func goBuild(ctx context.Context, out io.Writer, what, dir, bin string) error {
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-buildvcs=false", "-o", abs, "./cmd/vitola")
	cmd.Dir = dir
	_, err = runLong(out, what, cmd)
	return err
}

// fileHash is the SHA-256 of a file, in hex.
func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
