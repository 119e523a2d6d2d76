package callback_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vitolahq/vitola/sdk/callback"
)

// vector is one case of sdk/test/callback-vectors.json, which the TypeScript
// SDK's tests read too.
type vector struct {
	Name             string            `json:"name"`
	Secrets          []string          `json:"secrets"`
	Headers          map[string]string `json:"headers"`
	Body             string            `json:"body"`
	Now              int64             `json:"now"`
	ToleranceSeconds int64             `json:"toleranceSeconds"`
	Expect           struct {
		OK    bool   `json:"ok"`
		ID    string `json:"id"`
		Type  string `json:"type"`
		Error string `json:"error"`
	} `json:"expect"`
}

func (v vector) verifier() callback.Verifier {
	now := time.Unix(v.Now, 0)
	return callback.Verifier{
		Secrets:   v.Secrets,
		Tolerance: time.Duration(v.ToleranceSeconds) * time.Second,
		Now:       func() time.Time { return now },
	}
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	b, err := os.ReadFile("../test/callback-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Vectors []vector `json:"vectors"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Vectors) < 20 {
		t.Fatalf("only %d vectors", len(doc.Vectors))
	}
	return doc.Vectors
}

func TestVectors(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 123e6, time.UTC)
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			// As the vector spells the names: Verify matches them without regard to case.
			header := http.Header{}
			for k, val := range v.Headers {
				header[k] = []string{val}
			}
			e, err := v.verifier().Verify(header, []byte(v.Body))
			check := func(e *callback.Event, err error) {
				t.Helper()
				if !v.Expect.OK {
					var ce *callback.Error
					if !errors.As(err, &ce) {
						t.Fatalf("got %v, %v; want error %s", e, err, v.Expect.Error)
					}
					if ce.Code != v.Expect.Error {
						t.Fatalf("got code %s (%v), want %s", ce.Code, err, v.Expect.Error)
					}
					if e != nil {
						t.Fatalf("an event beside the error: %+v", e)
					}
					return
				}
				if err != nil {
					t.Fatalf("got %v, want event %s", err, v.Expect.ID)
				}
				if e.ID != v.Expect.ID || e.Type != v.Expect.Type || !e.CreatedAt.Equal(created) {
					t.Fatalf("got %s %s %s, want %s %s %s", e.ID, e.Type, e.CreatedAt, v.Expect.ID, v.Expect.Type, created)
				}
				var data map[string]any
				if err := json.Unmarshal(e.Data, &data); err != nil {
					t.Fatalf("data: %v", err)
				}
			}
			check(e, err)
			// Verify(secret, …) is the same check with one secret.
			if len(v.Secrets) == 1 && v.ToleranceSeconds == 0 {
				check(callback.Verify(v.Secrets[0], header, []byte(v.Body), time.Unix(v.Now, 0)))
			}
		})
	}
}

func TestErrorsNameNoSecretNorSignature(t *testing.T) {
	for _, v := range loadVectors(t) {
		header := http.Header{}
		for k, val := range v.Headers {
			header.Set(k, val)
		}
		_, err := v.verifier().Verify(header, []byte(v.Body))
		if err == nil {
			continue
		}
		msg := err.Error()
		for _, s := range v.Secrets {
			if strings.Contains(msg, s) || strings.Contains(msg, strings.TrimPrefix(s, "whsec_")) {
				t.Errorf("%s: the message names a secret: %s", v.Name, msg)
			}
		}
		if sig := header.Get(callback.HeaderSignature); len(sig) > 10 && strings.Contains(msg, sig[3:13]) {
			t.Errorf("%s: the message echoes the signature: %s", v.Name, msg)
		}
		if !strings.HasPrefix(msg, "callback: ") || len(msg) < 40 {
			t.Errorf("%s: the message does not say what was wrong: %q", v.Name, msg)
		}
	}
}

func TestErrorsMatchTheirSentinels(t *testing.T) {
	body := []byte(`{"id":"fev_1","type":"purchase.succeeded","createdAt":"2026-01-01T00:00:00.000Z","data":{}}`)
	now := time.Unix(1767225600, 0)
	signed := func(secret string, ts time.Time, b []byte) http.Header {
		h := http.Header{}
		h.Set(callback.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
		h.Set(callback.HeaderSignature, callback.Sign(secret, b, ts))
		return h
	}
	for _, c := range []struct {
		name   string
		v      callback.Verifier
		header http.Header
		body   []byte
		want   error
		status int
	}{
		{"missing timestamp", callback.Verifier{Secrets: []string{"whsec_a"}}, http.Header{callback.HeaderSignature: {"v1=00"}}, body, callback.ErrMissingTimestamp, 401},
		{"missing signature", callback.Verifier{Secrets: []string{"whsec_a"}}, http.Header{callback.HeaderTimestamp: {"1767225600"}}, body, callback.ErrMissingSignature, 401},
		{"timestamp sent twice", callback.Verifier{Secrets: []string{"whsec_a"}}, http.Header{callback.HeaderTimestamp: {"1767225600", "1767225600"}, callback.HeaderSignature: {"v1=00"}}, body, callback.ErrInvalidTimestamp, 401},
		{"stale", callback.Verifier{Secrets: []string{"whsec_a"}}, signed("whsec_a", now.Add(-time.Hour), body), body, callback.ErrTimestampOutOfTolerance, 401},
		{"wrong secret", callback.Verifier{Secrets: []string{"whsec_a"}, Now: func() time.Time { return now }}, signed("whsec_b", now, body), body, callback.ErrNoMatchingSignature, 401},
		{"not JSON", callback.Verifier{Secrets: []string{"whsec_a"}, Now: func() time.Time { return now }}, signed("whsec_a", now, []byte("nope")), []byte("nope"), callback.ErrInvalidBody, 400},
		{"no secret", callback.Verifier{}, signed("whsec_a", now, body), body, callback.ErrMisconfigured, 500},
		// An empty key would let anyone sign: refused, not used.
		{"empty secret", callback.Verifier{Secrets: []string{"whsec_a", ""}, Now: func() time.Time { return now }}, signed("", now, body), body, callback.ErrMisconfigured, 500},
		{"negative tolerance", callback.Verifier{Secrets: []string{"whsec_a"}, Tolerance: -time.Second}, signed("whsec_a", now, body), body, callback.ErrMisconfigured, 500},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.v.Now == nil && c.name != "stale" {
				c.v.Now = func() time.Time { return now }
			}
			_, err := c.v.Verify(c.header, c.body)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			for _, other := range []error{callback.ErrInvalidBody, callback.ErrNoMatchingSignature, callback.ErrMissingTimestamp} {
				if other != c.want && errors.Is(err, other) {
					t.Fatalf("%v also matches %v", err, other)
				}
			}
			var ce *callback.Error
			if errors.As(err, &ce); ce.Status() != c.status {
				t.Fatalf("status %d, want %d", ce.Status(), c.status)
			}
		})
	}
}

func TestSignIsWhatVerifyAccepts(t *testing.T) {
	vs := loadVectors(t)
	v := vs[0]
	if v.Name != "valid single signature" {
		t.Fatalf("the first vector is %q", v.Name)
	}
	ts, _ := strconv.ParseInt(v.Headers[callback.HeaderTimestamp], 10, 64)
	if got := callback.Sign(v.Secrets[0], []byte(v.Body), time.Unix(ts, 0)); got != v.Headers[callback.HeaderSignature] {
		t.Fatalf("Sign = %s, want the vector's %s", got, v.Headers[callback.HeaderSignature])
	}

	// A rotation: the values of both secrets, comma-separated.
	body := []byte(`{"id":"fev_9","type":"session.cancelled","createdAt":"2026-01-01T00:00:00.000Z","data":{}}`)
	now := time.Now()
	h := http.Header{}
	h.Set(callback.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(callback.HeaderSignature, callback.Sign("whsec_new", body, now)+","+callback.Sign("whsec_old", body, now))
	for _, secrets := range [][]string{{"whsec_new"}, {"whsec_old"}, {"whsec_other", "whsec_old"}} {
		e, err := callback.Verifier{Secrets: secrets}.Verify(h, body)
		if err != nil || e.ID != "fev_9" || e.Type != callback.SessionCancelled {
			t.Fatalf("%v: %+v, %v", secrets, e, err)
		}
	}
}
