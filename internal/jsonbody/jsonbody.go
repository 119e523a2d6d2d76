// Package jsonbody reads JSON request bodies strictly, the same way on every
// route: Content-Type application/json, a size limit (413), exactly one JSON
// value, no member named twice in one object at any depth, nesting at most
// MaxDepth levels, UTF-8 only (no unpaired surrogate escapes), and, decoded
// into a struct, only that struct's fields, spelt exactly.
//
// Parsers disagree on what such bodies mean (the first or the last of two
// members, a second value ignored or not, "Query" matching "query" or not,
// invalid UTF-8 replaced or kept), so a body that a proxy, a log or a signature
// reads one way could reach the handler meaning another. Refusing them leaves
// nothing to disagree on. The check is one linear pass over the bytes; every
// error is a *Error whose message names the place and never a Go type.
package jsonbody

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"mime"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/vitolahq/vitola/internal/apierr"
)

// MaxDepth is the default bound on nesting: objects and arrays inside one
// another. No request body of the platform comes near it.
const MaxDepth = 32

// Stable error codes (the REST error body's "error").
const (
	CodeInvalid   = "invalid_body"
	CodeTooLarge  = "body_too_large"
	CodeMediaType = "unsupported_media_type"
	CodeTimeout   = "request_timeout"
)

// Error is a body refused: the HTTP status and stable code to answer, and a
// message for the client.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

func invalid(format string, a ...any) *Error {
	return &Error{http.StatusBadRequest, CodeInvalid, fmt.Sprintf(format, a...)}
}

// IsJSON reports whether a Content-Type names JSON: application/json, in any
// case, with parameters allowed but a charset only if it is UTF-8 (RFC 8259).
func IsJSON(contentType string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "utf8")
}

// Read checks that a request sends one JSON body (Content-Type
// application/json) and reads it, at most limit bytes. It returns an *Error:
// 415 unsupported_media_type, 413 body_too_large, or 400 invalid_body when the
// body cannot be read. It does not parse the body (Decode or Valid do).
func Read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if ct := r.Header.Values("Content-Type"); len(ct) != 1 || !IsJSON(ct[0]) {
		return nil, &Error{http.StatusUnsupportedMediaType, CodeMediaType, "send a JSON body with one Content-Type: application/json header"}
	}
	tooLarge := &Error{http.StatusRequestEntityTooLarge, CodeTooLarge, "the body must be at most " + Size(limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge
	case TimedOut(err):
		return nil, &Error{http.StatusRequestTimeout, CodeTimeout, TimeoutMessage(r)}
	case err != nil:
		return nil, invalid("the request body could not be read: send it again")
	}
	return body, nil
}

// TimedOut reports whether err, from reading a request body, is the
// server's read timeout cutting off a body that was still arriving.
func TimedOut(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// TimeoutMessage says why a body that timed out was refused, naming the
// server's read timeout (http.Server.ReadTimeout) when r carries its server.
func TimeoutMessage(r *http.Request) string {
	within := "in time"
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.ReadTimeout > 0 {
		within = "within " + srv.ReadTimeout.String()
	}
	return "the request body did not arrive " + within + " of the request's start: send the whole request at once, and check Content-Length matches the body"
}

// Size says n bytes the way messages and docs do: "64 KB", "1 MB", "100 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Rules are the strict checks' settings; the zero value is the default.
type Rules struct {
	// MaxDepth bounds nesting (0: MaxDepth).
	MaxDepth int
	// AllowUnknownFields lets Decode skip members its struct does not name
	// (still checked for duplicates and depth).
	AllowUnknownFields bool
}

// Valid checks that data is exactly one JSON value with no duplicate member
// and nesting within MaxDepth.
func Valid(data []byte) error { return Rules{}.Valid(data) }

// Decode checks data strictly (as Valid, and against v's fields: unknown or
// differently spelt members and values of the wrong kind are refused, naming
// where) and then decodes it into v, a non-nil pointer.
func Decode(data []byte, v any) error { return Rules{}.Decode(data, v) }

// Valid is the package's Valid under these rules.
func (ru Rules) Valid(data []byte) error { return ru.check(data, nil) }

// Decode is the package's Decode under these rules.
func (ru Rules) Decode(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		panic("jsonbody: Decode needs a non-nil pointer")
	}
	if err := ru.check(data, shapeOf(t.Elem())); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return unmarshalError(err)
	}
	return nil
}

// unmarshalError says what encoding/json refused after the strict pass let
// the body through: a number out of range, mostly. Its own text names Go
// types, so only the field and the value are kept.
func unmarshalError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := te.Field
		if where == "" {
			where = "the body"
		}
		if num, ok := strings.CutPrefix(te.Value, "number "); ok {
			return invalid("%s: the number %s is out of range", where, apierr.Clip(num))
		}
		return invalid("%s: this value cannot be used here", where)
	}
	return invalid("the body could not be decoded")
}

func (ru Rules) check(data []byte, sh *shape) error {
	s := scanner{data: data, maxDepth: ru.MaxDepth, allowUnknown: ru.AllowUnknownFields}
	if s.maxDepth <= 0 {
		s.maxDepth = MaxDepth
	}
	s.ws()
	if s.i == len(data) {
		return invalid("the body is empty: send a JSON object")
	}
	if err := s.value(sh, 0); err != nil {
		return err
	}
	s.ws()
	if s.i < len(data) {
		return invalid("the body holds more than one JSON value: unexpected data at byte %d after the first", s.i)
	}
	return nil
}

// shape is what a Go type accepts, as far as the strict pass checks it.
type shape struct {
	kind   kind
	fields map[string]*shape // kObject: the struct's members, exact names
	elem   *shape            // kArray, kMap: the elements' shape
}

type kind uint8

const (
	kAny kind = iota
	kObject
	kMap
	kArray
	kString
	kNumber
	kInt
	kUint
	kBool
)

var (
	anyShape      = &shape{kind: kAny}
	shapes        sync.Map // reflect.Type → *shape
	unmarshaler   = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshal = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s := build(t, map[reflect.Type]*shape{})
	shapes.Store(t, s)
	return s
}

func build(t reflect.Type, seen map[reflect.Type]*shape) *shape {
	if s, ok := seen[t]; ok {
		return s
	}
	// Types that decode themselves (json.RawMessage, time.Time) take what
	// they take: encoding/json asks them.
	if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) ||
		t.Implements(textUnmarshal) || reflect.PointerTo(t).Implements(textUnmarshal) {
		return anyShape
	}
	switch t.Kind() {
	case reflect.Pointer:
		return build(t.Elem(), seen)
	case reflect.Struct:
		s := &shape{kind: kObject, fields: map[string]*shape{}}
		seen[t] = s
		addFields(s, t, seen)
		return s
	case reflect.Map:
		s := &shape{kind: kMap}
		seen[t] = s
		s.elem = build(t.Elem(), seen)
		return s
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &shape{kind: kString} // []byte is base64 text
		}
		fallthrough
	case reflect.Array:
		s := &shape{kind: kArray}
		seen[t] = s
		s.elem = build(t.Elem(), seen)
		return s
	case reflect.String:
		return &shape{kind: kString}
	case reflect.Bool:
		return &shape{kind: kBool}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &shape{kind: kInt}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return &shape{kind: kUint}
	case reflect.Float32, reflect.Float64:
		return &shape{kind: kNumber}
	}
	return anyShape
}

// addFields lists a struct's members as encoding/json names them; an embedded
// struct's members count as the outer struct's unless the outer names them.
func addFields(s *shape, t reflect.Type, seen map[reflect.Type]*shape) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := s.fields[name]; dup {
			continue
		}
		child := build(f.Type, seen)
		if strings.Contains(","+opts+",", ",string,") {
			child = anyShape // a number or bool written as a string
		}
		s.fields[name] = child
	}
	for _, et := range embedded {
		inner := build(et, seen)
		for name, child := range inner.fields {
			if _, ok := s.fields[name]; !ok {
				s.fields[name] = child
			}
		}
	}
}

func (k kind) expected() string {
	switch k {
	case kObject, kMap:
		return "an object"
	case kArray:
		return "an array"
	case kString:
		return "a string"
	case kNumber:
		return "a number"
	case kInt:
		return "a whole number"
	case kUint:
		return "a whole number, 0 or more"
	case kBool:
		return "true or false"
	}
	return "a value"
}

// scanner is the strict pass: a recursive descent over the bytes, bounded by
// maxDepth, that checks the grammar (RFC 8259), UTF-8, duplicates and, where a
// shape is known, member names and value kinds.
type scanner struct {
	data         []byte
	i            int
	maxDepth     int
	allowUnknown bool
	path         []step // where the scanner is, for messages
	keys         []name // member names of the open objects, innermost last
	arena        []byte // their text
	buf          []byte
}

func (s *scanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// step is one level of the current place: a member's name, or an index.
type step struct {
	name  name
	index int // -1 for a member
}

// name is a member name kept in the scanner's arena: the names of the open
// objects, innermost last, so that no name costs an allocation of its own.
type name struct{ start, end int32 }

func (s *scanner) text(n name) []byte { return s.arena[n.start:n.end] }

// where names the current place: "imageUrls[2]", or "" at the top.
func (s *scanner) where() string {
	var b strings.Builder
	for _, p := range s.path {
		if p.index >= 0 {
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(quoteKey(string(s.text(p.name))))
	}
	return b.String()
}

// at prefixes a message with the current place.
func (s *scanner) at(format string, a ...any) *Error {
	msg := fmt.Sprintf(format, a...)
	if w := s.where(); w != "" {
		msg = w + ": " + msg
	}
	return invalid("%s", msg)
}

func (s *scanner) syntax(what string) *Error {
	if s.i >= len(s.data) {
		return invalid("the body is not valid JSON: it ends in the middle of a value")
	}
	if what != "" {
		what = ", " + what
	}
	c := s.data[s.i]
	if c >= 0x20 && c < 0x7f {
		return invalid("the body is not valid JSON: unexpected %q at byte %d%s", string(rune(c)), s.i, what)
	}
	return invalid("the body is not valid JSON: unexpected byte 0x%02X at byte %d%s", c, s.i, what)
}

func (s *scanner) value(sh *shape, depth int) error {
	s.ws()
	if s.i >= len(s.data) {
		return s.syntax("")
	}
	var got string
	switch c := s.data[s.i]; {
	case c == '{':
		got = "an object"
		if ok := sh == nil || sh.kind == kAny || sh.kind == kObject || sh.kind == kMap; !ok {
			break
		}
		return s.object(sh, depth+1)
	case c == '[':
		got = "an array"
		if ok := sh == nil || sh.kind == kAny || sh.kind == kArray; !ok {
			break
		}
		return s.array(sh, depth+1)
	case c == '"':
		got = "a string"
		if err := s.str(false); err != nil {
			return err
		}
		if sh == nil || sh.kind == kAny || sh.kind == kString {
			return nil
		}
	case c == 't' || c == 'f' || c == 'n':
		lit := "null"
		switch c {
		case 't':
			lit = "true"
		case 'f':
			lit = "false"
		}
		if !bytes.HasPrefix(s.data[s.i:], []byte(lit)) {
			return s.syntax("expected a value")
		}
		s.i += len(lit)
		if c == 'n' || sh == nil || sh.kind == kAny || sh.kind == kBool {
			return nil // null leaves any field as it is, as encoding/json does
		}
		got = lit
	case c == '-' || c >= '0' && c <= '9':
		start := s.i
		whole, err := s.number()
		if err != nil {
			return err
		}
		if sh == nil || sh.kind == kAny || sh.kind == kNumber ||
			sh.kind == kInt && whole || sh.kind == kUint && whole && c != '-' {
			return nil
		}
		got = apierr.Clip(string(s.data[start:s.i]))
		if sh.kind != kInt && sh.kind != kUint {
			got = "a number"
		}
	default:
		return s.syntax("expected a value")
	}
	return s.at("expected %s, got %s", sh.kind.expected(), got)
}

func (s *scanner) object(sh *shape, depth int) error {
	if depth > s.maxDepth {
		return s.at("the body nests objects and arrays more than %d levels deep", s.maxDepth)
	}
	s.i++ // {
	first, arenaStart := len(s.keys), len(s.arena)
	defer func() { s.keys, s.arena = s.keys[:first], s.arena[:arenaStart] }()
	// Past 8 members, names are also found by their hash: the pass stays
	// linear in the number of members.
	var seen map[uint64]int32
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			return s.syntax("expected a member name in quotes")
		}
		if err := s.str(true); err != nil {
			return err
		}
		if s.seenBefore(s.keys[first:], seen) {
			return s.at("the member %s appears twice in one object: send it once", quote(string(s.buf)))
		}
		n := name{int32(len(s.arena)), int32(len(s.arena) + len(s.buf))}
		s.arena = append(s.arena, s.buf...)
		s.keys = append(s.keys, n)
		switch members := s.keys[first:]; {
		case seen != nil:
			seen[maphash.Bytes(hashSeed, s.buf)] = int32(len(members) - 1)
		case len(members) > 8:
			seen = make(map[uint64]int32, 32)
			for i, k := range members {
				seen[maphash.Bytes(hashSeed, s.text(k))] = int32(i)
			}
		}
		var child *shape
		if sh != nil {
			switch sh.kind {
			case kObject:
				c, ok := sh.fields[string(s.buf)]
				if !ok && !s.allowUnknown {
					return s.at("unknown field %s (names are case-sensitive)", quote(string(s.buf)))
				}
				if !ok {
					// An unknown member is skipped, but one that differs from
					// a field only in case would be read as that field by
					// encoding/json: refuse it rather than let it mean two things.
					for f := range sh.fields {
						if strings.EqualFold(f, string(s.buf)) {
							return s.at("member %s is not %s: names are case-sensitive", quote(string(s.buf)), quote(f))
						}
					}
				}
				child = c
				if !ok {
					child = anyShape
				}
			case kMap:
				child = sh.elem
			default:
				child = anyShape
			}
		}
		s.ws()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return s.syntax("expected ':' after a member name")
		}
		s.i++
		s.path = append(s.path, step{s.keys[len(s.keys)-1], -1})
		if err := s.value(child, depth); err != nil {
			return err
		}
		s.path = s.path[:len(s.path)-1]
		s.ws()
		if s.i >= len(s.data) {
			return s.syntax("")
		}
		switch s.data[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.syntax("expected ',' or '}'")
		}
	}
}

// seenBefore reports whether the name in s.buf is among an object's members
// so far; seen, once made, maps the hash of a name to the member's place.
func (s *scanner) seenBefore(members []name, seen map[uint64]int32) bool {
	if seen == nil {
		for _, k := range members {
			if bytes.Equal(s.text(k), s.buf) {
				return true
			}
		}
		return false
	}
	i, ok := seen[maphash.Bytes(hashSeed, s.buf)]
	if !ok {
		return false
	}
	if bytes.Equal(s.text(members[i]), s.buf) {
		return true
	}
	return s.seenBefore(members, nil) // two names with one hash: look at each
}

// hashSeed keys the hash of member names, differently in each process, so
// that no body can be made of names that collide.
var hashSeed = maphash.MakeSeed()

func (s *scanner) array(sh *shape, depth int) error {
	if depth > s.maxDepth {
		return s.at("the body nests objects and arrays more than %d levels deep", s.maxDepth)
	}
	s.i++ // [
	var elem *shape
	if sh != nil && sh.kind == kArray {
		elem = sh.elem
	}
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		s.path = append(s.path, step{index: n})
		if err := s.value(elem, depth); err != nil {
			return err
		}
		s.path = s.path[:len(s.path)-1]
		s.ws()
		if s.i >= len(s.data) {
			return s.syntax("")
		}
		switch s.data[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.syntax("expected ',' or ']'")
		}
	}
}

// str scans the string at s.i (its opening quote). With decode, its text is
// left in s.buf.
func (s *scanner) str(decode bool) error {
	s.i++ // "
	s.buf = s.buf[:0]
	for {
		if s.i >= len(s.data) {
			return s.syntax("")
		}
		c := s.data[s.i]
		switch {
		case c == '"':
			s.i++
			return nil
		case c == '\\':
			if err := s.escape(decode); err != nil {
				return err
			}
		case c < 0x20:
			return invalid("the body is not valid JSON: a string holds the control character 0x%02X at byte %d (escape it)", c, s.i)
		case c < utf8.RuneSelf:
			if decode {
				s.buf = append(s.buf, c)
			}
			s.i++
		default:
			r, size := utf8.DecodeRune(s.data[s.i:])
			if r == utf8.RuneError && size == 1 {
				return invalid("the body is not valid UTF-8 (byte %d)", s.i)
			}
			if decode {
				s.buf = append(s.buf, s.data[s.i:s.i+size]...)
			}
			s.i += size
		}
	}
}

// escape scans one escape sequence at s.i (its backslash).
func (s *scanner) escape(decode bool) error {
	if s.i+1 >= len(s.data) {
		s.i = len(s.data)
		return s.syntax("")
	}
	c := s.data[s.i+1]
	if r := unescape(c); r != 0 {
		if decode {
			s.buf = append(s.buf, r)
		}
		s.i += 2
		return nil
	}
	if c != 'u' {
		s.i++
		return s.syntax("not a JSON escape")
	}
	r, ok := s.hex4(s.i + 2)
	if !ok {
		s.i += 2
		return invalid("the body is not valid JSON: \\u needs four hex digits (byte %d)", s.i)
	}
	s.i += 6
	switch {
	case utf16.IsSurrogate(r) && r < 0xDC00: // high: a low one must follow
		lo, ok := rune(0), false
		if s.i+1 < len(s.data) && s.data[s.i] == '\\' && s.data[s.i+1] == 'u' {
			lo, ok = s.hex4(s.i + 2)
		}
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			return invalid("the body is not valid JSON: unpaired surrogate escape at byte %d", s.i-6)
		}
		s.i += 6
		r = utf16.DecodeRune(r, lo)
	case utf16.IsSurrogate(r):
		return invalid("the body is not valid JSON: unpaired surrogate escape at byte %d", s.i-6)
	}
	if decode {
		s.buf = utf8.AppendRune(s.buf, r)
	}
	return nil
}

// unescape is the byte a one-letter escape stands for, or 0.
func unescape(c byte) byte {
	switch c {
	case '"', '\\', '/':
		return c
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return 0
}

func (s *scanner) hex4(at int) (rune, bool) {
	if at+4 > len(s.data) {
		return 0, false
	}
	var r rune
	for _, c := range s.data[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number scans a number (RFC 8259 grammar) and reports whether it is written
// as a whole number (no fraction, no exponent).
func (s *scanner) number() (whole bool, _ error) {
	digits := func() int {
		n := 0
		for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.data[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.data) && s.data[s.i] == '0':
		s.i++
	case digits() == 0:
		return false, s.syntax("expected a digit")
	}
	whole = true
	if s.i < len(s.data) && s.data[s.i] == '.' {
		s.i++
		whole = false
		if digits() == 0 {
			return false, s.syntax("expected a digit after '.'")
		}
	}
	if s.i < len(s.data) && (s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		s.i++
		whole = false
		if s.i < len(s.data) && (s.data[s.i] == '+' || s.data[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false, s.syntax("expected a digit in the exponent")
		}
	}
	return whole, nil
}

// quote writes a member name for a message, shortened when long.
func quote(name string) string { return apierr.Quote(name) }

// quoteKey is a member name as a path element: bare when it is a plain word.
func quoteKey(name string) string {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return quote(name)
		}
	}
	if name == "" || len(name) > 40 {
		return quote(name)
	}
	return name
}
