package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The photos /examples/bands/ serves are what this program renders today.
func TestServedPhotosAreFresh(t *testing.T) {
	photos, err := servedPhotos()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("..", "bands", "*.jpg"))
	if len(files) != len(photos) {
		t.Errorf("examples/bands holds %d photos, want %d: run `go run ./examples/bandsamples -served examples/bands` and commit them", len(files), len(photos))
	}
	for name, want := range photos {
		got, err := os.ReadFile(filepath.Join("..", "bands", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("examples/bands/%s is stale or missing (%v): run `go run ./examples/bandsamples -served examples/bands` and commit it", name, err)
		}
	}
}
