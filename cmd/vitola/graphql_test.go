package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// vitola graphql documents add registers a client's manifest (Relay,
// GraphQL Code Generator, Apollo) with the running server, and vitola keys
// set makes a key run only those documents.
func TestTrustedDocumentsCommands(t *testing.T) {
	data := t.TempDir()
	addr := loopbackAddr(t)
	serveForTest(t, addr, "--data", data, "--payments-addr", loopbackAddr(t))
	manifests := filepath.Join("..", "..", "router", "testdata", "manifests")

	for _, tt := range []struct{ file, want string }{
		{"relay.json", "added 2 trusted documents (0 already there)"},
		{"relay.json", "added 0 trusted documents (2 already there)"},
		{"codegen.json", "added 2 trusted documents (0 already there)"},
		{"apollo.json", "added 2 trusted documents (0 already there)"},
	} {
		if line, err := admin(t, "graphql", "documents", "add", "--data", data, filepath.Join(manifests, tt.file)); err != nil || line != tt.want {
			t.Fatalf("documents add %s: %q, %v; want %q", tt.file, line, err, tt.want)
		}
	}
	if _, err := admin(t, "graphql", "documents", "add", "--data", data, filepath.Join(manifests, "apollo.golden.json")); err == nil {
		t.Fatal("a file that is no manifest was added")
	}

	key, err := admin(t, "keys", "create", "--name", "app", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin(t, "keys", "set", "--data", data, key); err == nil {
		t.Fatal("keys set without a setting succeeded")
	}
	line, err := admin(t, "keys", "set", "--data", data, "--trusted-documents-only=true", key)
	if err != nil || !strings.HasSuffix(line, " trusted-documents-only=true") {
		t.Fatalf("keys set: %q, %v", line, err)
	}

	post := func(body string) (int, string) {
		res, b := postJSON(t, "http://"+addr+"/graphql", key, "", []byte(body))
		return res.StatusCode, string(b)
	}
	// Relay sends its document ID; Apollo its hash.
	if status, out := post(`{"documentId":"3f1b5b9a0c1e8f0e6a2f0d1c4b7a9e21","variables":{"first":2}}`); status != 200 || !strings.Contains(out, `"brands"`) || strings.Contains(out, `"errors"`) {
		t.Fatalf("a Relay document by its ID: %d %s", status, out)
	}
	if status, out := post(`{"operationName":"Typename","extensions":{"persistedQuery":{"version":1,"sha256Hash":"80873183e74c7fa5bfb385f2d9d28a83f9bda01a52784fcec920269ce73cef26"}}}`); status != 200 || !strings.Contains(out, `"__typename":"Query"`) {
		t.Fatalf("an Apollo document by its hash: %d %s", status, out)
	}
	status, out := post(`{"query":"{ brands(first: 1) { edges { cursor } } }"}`)
	var reply struct {
		Errors []struct{ Extensions struct{ Code string } }
	}
	json.Unmarshal([]byte(out), &reply)
	if status != 403 || len(reply.Errors) != 1 || reply.Errors[0].Extensions.Code != "TRUSTED_DOCUMENTS_ONLY" {
		t.Fatalf("another operation with a trusted-documents-only key: %d %s", status, out)
	}
}
