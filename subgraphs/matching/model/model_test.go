package model_test

import (
	"strings"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/model"
)

// The vendor's key goes with every call: only https, or http on loopback.
func TestNewRefusesAKeyInClear(t *testing.T) {
	for url, ok := range map[string]bool{
		"https://vision.example/v1/identify": true,
		"http://127.0.0.1:9000/identify":     true,
		"http://[::1]:9000/identify":         true,
		"http://localhost:9000/identify":     true,
		"http://vision.example/v1/identify":  false,
		"http://10.0.0.5/identify":           false,
		"ftp://vision.example/":              false,
		"vision.example/identify":            false,
	} {
		_, err := model.New(url, "vendor-secret")
		if (err == nil) != ok {
			t.Errorf("New(%q): %v", url, err)
		}
		if err != nil && strings.Contains(err.Error(), "vendor-secret") {
			t.Errorf("New(%q) shows the key", url)
		}
	}
}

// A failed call's error (which is logged) never shows the URL's query, where a
// vendor's credential may sit.
func TestErrorsHideTheURLQuery(t *testing.T) {
	m, err := model.New("http://127.0.0.1:1/identify?api_key=vendor-secret", "")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = m.Identify(t.Context(), []string{"https://images.example/band.jpg"}, "")
	if err == nil || strings.Contains(err.Error(), "vendor-secret") {
		t.Fatalf("error %v", err)
	}
}
