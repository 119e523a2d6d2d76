package jsonbody_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vitolahq/vitola/internal/jsonbody"
)

type request struct {
	Query  *string  `json:"query"`
	Limit  *int     `json:"limit"`
	Count  uint     `json:"count"`
	Score  float64  `json:"score"`
	Force  *bool    `json:"force"`
	URLs   []string `json:"imageUrls"`
	Nested *struct {
		Name string `json:"name"`
	} `json:"nested"`
	Raw json.RawMessage `json:"raw"`
	embedded
}

type embedded struct {
	Extra string `json:"extra"`
}

// internals are what a message must never show: Go types, encoding/json's own
// wording, file paths, stack details.
var internals = regexp.MustCompile(`Go (value|struct)|struct ?\{|json:|\.go\b|\*?[a-z]+\.[A-Z]\w+|map\[|interface ?\{|goroutine|0x[0-9a-f]{6,}|/[a-z]+/`)

func TestDecode(t *testing.T) {
	tests := []struct {
		name, body string
		msg        string // part of the message; "" when accepted
	}{
		{"plain", `{"query":"padron","limit":3}`, ""},
		{"whitespace around", " \n\t{\"query\":\"padron\"}\r\n ", ""},
		{"nulls", `{"query":null,"limit":null,"nested":null}`, ""},
		{"nested and raw", `{"nested":{"name":"x"},"raw":{"a":[1,{"b":2}]}}`, ""},
		{"embedded field", `{"extra":"x"}`, ""},
		{"escaped names match", `{"\u0071uery":"padron"}`, ""},
		{"surrogate pair", `{"query":"\ud83d\ude00"}`, ""},
		{"trailing object", `{"query":"padron"} {"x":1}`, "more than one JSON value: unexpected data at byte 19"},
		{"trailing garbage", `{"query":"padron"}x`, "more than one JSON value"},
		{"duplicate", `{"query":"a","query":"b"}`, `the member "query" appears twice`},
		{"duplicate escaped", `{"query":"a","\u0071uery":"b"}`, `the member "query" appears twice`},
		{"duplicate deep", `{"raw":{"a":{"b":[{"c":1,"c":2}]}}}`, `raw.a.b[0]: the member "c" appears twice`},
		{"duplicate in a big object", `{"raw":{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"a":2}}`, `raw: the member "a" appears twice`},
		{"case differs", `{"Query":"padron"}`, `unknown field "Query"`},
		{"unknown", `{"colour":"red"}`, `unknown field "colour"`},
		{"unknown nested", `{"nested":{"nom":"x"}}`, `nested: unknown field "nom"`},
		{"string for int", `{"limit":"3"}`, "limit: expected a whole number, got a string"},
		{"fraction for int", `{"limit":1.5}`, "limit: expected a whole number, got 1.5"},
		{"negative for uint", `{"count":-1}`, "count: expected a whole number, 0 or more, got -1"},
		{"bool for float", `{"score":true}`, "score: expected a number, got true"},
		{"number for bool", `{"force":1}`, "force: expected true or false, got a number"},
		{"number in string list", `{"imageUrls":["a",2]}`, "imageUrls[1]: expected a string, got a number"},
		{"object for string", `{"query":{}}`, "query: expected a string, got an object"},
		{"array body", `["padron"]`, "expected an object, got an array"},
		{"string body", `"padron"`, "expected an object, got a string"},
		{"out of range", `{"limit":1e400}`, "limit: expected a whole number"},
		{"int overflow", `{"limit":99999999999999999999}`, "limit: the number 99999999999999999999 is out of range"},
		{"empty", "", "the body is empty"},
		{"blank", "  \n", "the body is empty"},
		{"truncated", `{"query":"pad`, "ends in the middle"},
		{"truncated object", `{"query":"padron"`, "ends in the middle"},
		{"single quotes", `{'query':'x'}`, `unexpected "'" at byte 1`},
		{"trailing comma", `{"query":"x",}`, `unexpected "}"`},
		{"leading zero", `{"limit":01}`, "the body is not valid JSON"},
		{"bare word", `{"query":padron}`, "the body is not valid JSON"},
		{"control character", "{\"query\":\"a\x01b\"}", "control character 0x01"},
		{"invalid UTF-8", "{\"query\":\"a\xffb\"}", "not valid UTF-8"},
		{"lone high surrogate", `{"query":"\ud800"}`, "unpaired surrogate"},
		{"lone low surrogate", `{"query":"\udc00x"}`, "unpaired surrogate"},
		{"bad escape", `{"query":"\x41"}`, "not a JSON escape"},
		{"short unicode escape", `{"query":"\u12"}`, "four hex digits"},
		{"BOM", "\xef\xbb\xbf{}", "unexpected byte 0xEF"},
		{"too deep", `{"raw":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, "more than 32 levels deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v request
			err := jsonbody.Decode([]byte(tt.body), &v)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *jsonbody.Error
			if !errors.As(err, &e) || e.Status != 400 || e.Code != "invalid_body" {
				t.Fatalf("err = %#v, want a 400 invalid_body", err)
			}
			if !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message %q does not say %q", e.Message, tt.msg)
			}
			if internals.MatchString(e.Message) {
				t.Errorf("message %q names internals", e.Message)
			}
		})
	}
}

func TestDecodeFillsLikeEncodingJSON(t *testing.T) {
	body := []byte(`{"query":"padr\u00f3n","limit":3,"count":2,"score":0.5,"force":true,"imageUrls":["a","b"],"nested":{"name":"n"},"raw":{"x":[1]},"extra":"e"}`)
	var got, want request
	if err := jsonbody.Decode(body, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || *got.Query != "padrón" {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestValidAndRules(t *testing.T) {
	if err := jsonbody.Valid([]byte(`{"a":1,"A":2,"b":[{"a":1},{"a":2}]}`)); err != nil {
		t.Fatalf("names differing in case, and one name in two objects, are not duplicates: %v", err)
	}
	if err := jsonbody.Valid([]byte(`{"query":"x","variables":{"a":1,"a":2}}`)); err == nil {
		t.Fatal("a duplicate inside a nested object was accepted")
	}
	deep := []byte(strings.Repeat("[", 10) + strings.Repeat("]", 10))
	if err := (jsonbody.Rules{MaxDepth: 9}).Valid(deep); err == nil {
		t.Fatal("MaxDepth 9 accepted 10 levels")
	}
	if err := (jsonbody.Rules{MaxDepth: 10}).Valid(deep); err != nil {
		t.Fatalf("MaxDepth 10 refused 10 levels: %v", err)
	}
	var v struct {
		Query string `json:"query"`
	}
	if err := (jsonbody.Rules{AllowUnknownFields: true}).Decode([]byte(`{"query":"x","extensions":{"a":1}}`), &v); err != nil || v.Query != "x" {
		t.Fatalf("AllowUnknownFields: %v %+v", err, v)
	}
	if err := (jsonbody.Rules{AllowUnknownFields: true}).Decode([]byte(`{"query":"x","extensions":{"a":1,"a":1}}`), &v); err == nil {
		t.Fatal("AllowUnknownFields let a duplicate through")
	}
}

// TestDepthIsCheckedBeforeTheWholeBodyIsWalked: a body nested far deeper than
// the bound is refused at the bound, not after descending all the way.
func TestDepthIsCheckedBeforeTheWholeBodyIsWalked(t *testing.T) {
	body := []byte(strings.Repeat("[", 1<<20))
	err := jsonbody.Valid(body)
	if err == nil || !strings.Contains(err.Error(), "more than 32 levels deep") {
		t.Fatalf("err = %v", err)
	}
}

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                  true,
		"Application/JSON":                  true,
		"application/json; charset=utf-8":   true,
		"application/json;charset=UTF-8":    true,
		"application/json; charset=utf-16":  false,
		"application/json-patch+json":       false,
		"application/jsonx":                 false,
		"text/plain":                        false,
		"application/x-www-form-urlencoded": false,
		"":                                  false,
		"application/json; =bad":            false,
	} {
		if got := jsonbody.IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}

func TestRead(t *testing.T) {
	const limit = 64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := jsonbody.Read(w, r, limit)
		var e *jsonbody.Error
		if errors.As(err, &e) {
			w.WriteHeader(e.Status)
			io.WriteString(w, e.Code+": "+e.Message)
			return
		}
		w.Write(body)
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	tests := []struct {
		name        string
		contentType []string
		body        io.Reader
		status      int
		says        string
	}{
		{"json", []string{"application/json"}, strings.NewReader(`{}`), 200, "{}"},
		{"json with charset", []string{"application/json; charset=utf-8"}, strings.NewReader(`{}`), 200, "{}"},
		{"text", []string{"text/plain"}, strings.NewReader(`{}`), 415, "unsupported_media_type"},
		{"form", []string{"application/x-www-form-urlencoded"}, strings.NewReader(`{}`), 415, "unsupported_media_type"},
		{"none", nil, strings.NewReader(`{}`), 415, "unsupported_media_type"},
		{"two", []string{"application/json", "text/plain"}, strings.NewReader(`{}`), 415, "unsupported_media_type"},
		{"too large, length known", []string{"application/json"}, strings.NewReader(strings.Repeat(" ", limit+1)), 413, "body_too_large: the body must be at most 64 bytes"},
		{"too large, chunked", []string{"application/json"}, io.MultiReader(strings.NewReader(strings.Repeat(" ", limit+1))), 413, "body_too_large"},
		{"at the limit", []string{"application/json"}, strings.NewReader(strings.Repeat(" ", limit-2) + "{}"), 200, "{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL, tt.body)
			for _, ct := range tt.contentType {
				req.Header.Add("Content-Type", ct)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status || !strings.Contains(string(b), tt.says) {
				t.Fatalf("%d %s, want %d %s", res.StatusCode, b, tt.status, tt.says)
			}
		})
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{64 << 10: "64 KB", 1 << 20: "1 MB", 100: "100 bytes", 1500: "1500 bytes"} {
		if got := jsonbody.Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzStrictJSON: the strict pass never panics, never accepts what
// encoding/json refuses, and accepts everything encoding/json accepts unless
// the document has a duplicate member, nests deeper than MaxDepth, is not
// UTF-8 or holds a surrogate escape: those are the only refusals it adds.
// Decoded into a struct, an accepted body means what encoding/json says.
// quoted matches the Go-quoted strings a message repeats from the input.
var quoted = regexp.MustCompile(`"(\\.|[^"\\])*"`)

// ownWordsRemoved drops from a message what it repeats of the input: quoted
// strings, and path segments (member names) found in the input.
func ownWordsRemoved(msg string, input []byte) string {
	msg = quoted.ReplaceAllString(msg, `""`)
	if i := strings.Index(msg, ": "); i > 0 {
		segments := strings.FieldsFunc(msg[:i], func(r rune) bool { return r == '.' || r == '[' || r == ']' })
		own := true
		for _, seg := range segments {
			own = own && bytes.Contains(input, []byte(seg))
		}
		if own {
			msg = msg[i+2:]
		}
	}
	return msg
}

func FuzzStrictJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `0`, `-1.5e+3`, `"x"`, `{"query":"padron"}`, `{"query":"padron"} {"x":1}`,
		`{"query":"a","query":"b"}`, `{"a":{"b":{"a":1,"b":2}}}`, `{"a":[{"x":1},{"x":1,"x":2}]}`,
		`{"\u0071":1,"q":2}`, `{"\ud83d\ude00":1}`, `"\ud800"`, "\"\xff\"", `[1,2,[3,[4]]]`,
		`{"limit":3,"imageUrls":["a"],"nested":{"name":"n"}}`, `{"Query":"x"}`, `{"limit":1e400}`,
		strings.Repeat("[", 33) + strings.Repeat("]", 33), ` {"a" : [ true , false , null ] } `,
	} {
		f.Add([]byte(s))
	}
	surrogate := regexp.MustCompile(`(?i)\\ud[89a-f]`)
	f.Fuzz(func(t *testing.T, data []byte) {
		err := jsonbody.Valid(data)
		if err != nil {
			var e *jsonbody.Error
			if !errors.As(err, &e) || e.Status != 400 || e.Code != "invalid_body" || e.Message == "" {
				t.Fatalf("error %#v is not a 400 invalid_body", err)
			}
			// Member names and values repeated from the input (quoted, or
			// as the path to the place) are the client's own words, not
			// internals.
			if internals.MatchString(ownWordsRemoved(e.Message, data)) {
				t.Fatalf("message %q names internals", e.Message)
			}
		}
		if err == nil && !json.Valid(data) {
			t.Fatalf("accepted what encoding/json refuses: %q", data)
		}
		if err != nil && json.Valid(data) && utf8.Valid(data) && !surrogate.Match(data) {
			depth, dup := oracle(t, data)
			if depth <= jsonbody.MaxDepth && !dup {
				t.Fatalf("refused a document encoding/json accepts, without duplicates, %d deep: %q: %v", depth, data, err)
			}
		}
		var got, want request
		if jsonbody.Decode(data, &got) == nil {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&want); err != nil {
				t.Fatalf("Decode accepted %q, encoding/json refuses it: %v", data, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Decode(%q) = %+v, encoding/json says %+v", data, got, want)
			}
		}
	})
}

// oracle measures a document encoding/json accepts with its own tokenizer:
// its nesting depth and whether any object names a member twice.
func oracle(t *testing.T, data []byte) (depth int, dup bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct {
		object bool
		keys   map[string]bool
		key    bool // the next token is a member name
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return depth, dup
		}
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &level{object: d == '{', keys: map[string]bool{}, key: true})
				depth = max(depth, len(stack))
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if top != nil && top.object {
			if top.key {
				k := tok.(string)
				dup = dup || top.keys[k]
				top.keys[k] = true
			}
			top.key = !top.key
		}
	}
}

// BenchmarkValid: the strict pass against encoding/json's own Valid (which
// checks syntax only) on 64 KB bodies of several shapes, in the same run.
func BenchmarkValid(b *testing.B) {
	var members, objects strings.Builder
	members.WriteString("{")
	for i := 0; members.Len() < 64<<10; i++ {
		if i > 0 {
			members.WriteString(",")
		}
		fmt.Fprintf(&members, `"member%d":%d`, i, i)
	}
	members.WriteString("}")
	objects.WriteString("[")
	for i := 0; objects.Len() < 64<<10; i++ {
		if i > 0 {
			objects.WriteString(",")
		}
		objects.WriteString(`{"a":1,"b":"two","c":[true,null]}`)
	}
	objects.WriteString("]")
	bodies := []struct{ name, body string }{
		{"many members", members.String()},
		{"many objects", objects.String()},
		{"long string", `{"query":"` + strings.Repeat("padrón ", 64<<10/8) + `"}`},
		{"deep", strings.Repeat(`{"a":`, 32) + "1" + strings.Repeat("}", 32)},
	}
	for _, c := range bodies {
		data := []byte(c.body)
		b.Run(c.name+"/jsonbody", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := jsonbody.Valid(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if !json.Valid(data) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
