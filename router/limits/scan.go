package limits

// The scanners here read an operation's text, and a request's JSON, once,
// before any parser builds anything from them: in time linear in their length,
// with no allocation and no recursion. Parsers build trees whose cost grows
// faster than the text (a list literal nested 520,000 levels deep in a 1 MB body
// took 109 s and 2 GB to be refused), so what they would build is bounded here
// first.

// Text is what one pass over an operation's text found.
type Text struct {
	// Tokens counts lexical tokens: punctuators, names, numbers and strings.
	// Ignored tokens (white space, commas, comments, byte order marks) are not
	// counted; nor is the end of the text.
	Tokens int
	// Nesting is the deepest nesting of brackets of every kind together: { [ (
	// (selection sets, arguments, list and object values, list types).
	Nesting int
}

// ScanQuery counts an operation's tokens and measures its nesting as a
// GraphQL lexer reads it: brackets inside strings, block strings and comments
// do not count.
//
// Two parsers read the text after this scan: gqlparser (the analyzer's, which
// follows the specification) and graphql-go-tools (the engine's, which only
// runs on what gqlparser accepted). On such texts they part only on block
// strings: the engine lets a backslash escape any quote, and closes a run of
// four quotes after the third, where gqlparser closes it after the last. A
// text with a block string is therefore scanned both ways and the larger
// figures kept, so the bound holds for whichever parser reads it.
func ScanQuery(query string) Text {
	t, blockString := scanQuery(query, false)
	if blockString {
		e, _ := scanQuery(query, true)
		t.Tokens = max(t.Tokens, e.Tokens)
		t.Nesting = max(t.Nesting, e.Nesting)
	}
	return t
}

// scanQuery is one pass; engine selects the engine's reading of block strings.
// It reports whether it met a block string.
func scanQuery(q string, engine bool) (t Text, blockString bool) {
	depth := 0
	n := len(q)
	for i := 0; i < n; {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			i++
		case c == 0xEF && i+2 < n && q[i+1] == 0xBB && q[i+2] == 0xBF: // byte order mark
			i += 3
		case c == '#':
			// A comment runs to the end of the line. gqlparser ends it at any
			// control character but a tab (and then refuses that character):
			// ending it there too never hides a bracket it reads.
			i++
			for i < n && (q[i] >= 0x20 || q[i] == '\t') {
				i++
			}
		case c == '{' || c == '[' || c == '(':
			t.Tokens++
			depth++
			t.Nesting = max(t.Nesting, depth)
			i++
		case c == '}' || c == ']' || c == ')':
			t.Tokens++
			if depth > 0 {
				depth--
			}
			i++
		case c == '"':
			t.Tokens++
			switch {
			case i+2 >= n || q[i+1] != '"' || q[i+2] != '"':
				i = stringEnd(q, i+1)
			case engine:
				blockString = true
				i = engineBlockStringEnd(q, i+3)
			default:
				blockString = true
				i = blockStringEnd(q, i+3)
			}
		case c == '.':
			t.Tokens++
			if i+2 < n && q[i+1] == '.' && q[i+2] == '.' {
				i += 3
			} else {
				i++
			}
		case isNameStart(c):
			t.Tokens++
			i++
			for i < n && (isNameStart(q[i]) || isDigit(q[i])) {
				i++
			}
		case c == '-' || isDigit(c):
			t.Tokens++
			i = numberEnd(q, i)
		default:
			// Punctuators (! $ & : = @ |) and any character a parser refuses:
			// one token each.
			t.Tokens++
			i++
		}
	}
	return t, blockString
}

func isNameStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numberEnd reads -?digits(.digits)?([eE][+-]?digits)? from i, as gqlparser does.
func numberEnd(q string, i int) int {
	if q[i] == '-' {
		i++
	}
	digits := func() {
		for i < len(q) && isDigit(q[i]) {
			i++
		}
	}
	digits()
	if i+1 < len(q) && q[i] == '.' && isDigit(q[i+1]) {
		i++
		digits()
	}
	if i < len(q) && (q[i] == 'e' || q[i] == 'E') {
		j := i + 1
		if j < len(q) && (q[j] == '+' || q[j] == '-') {
			j++
		}
		if j < len(q) && isDigit(q[j]) {
			i = j
			digits()
		}
	}
	return i
}

// stringEnd returns where a single-line string whose content starts at i ends:
// after its closing quote, or at the line terminator or end of text where a
// parser refuses it as unterminated. A backslash escapes the next character
// unless that is a line terminator.
func stringEnd(q string, i int) int {
	for i < len(q) {
		switch q[i] {
		case '"':
			return i + 1
		case '\n', '\r':
			return i
		case '\\':
			if i+1 < len(q) && q[i+1] != '\n' && q[i+1] != '\r' {
				i++
			}
		}
		i++
	}
	return i
}

// blockStringEnd returns where a block string whose content starts at i ends,
// as gqlparser reads it (the specification's reading, but for a run of more
// than three quotes, whose last three close it): \""" is an escaped triple
// quote, anything else is content.
func blockStringEnd(q string, i int) int {
	for i < len(q) {
		switch q[i] {
		case '"':
			j := i
			for j < len(q) && q[j] == '"' {
				j++
			}
			if j-i >= 3 {
				return j
			}
			i = j
		case '\\':
			if i+3 < len(q) && q[i+1] == '"' && q[i+2] == '"' && q[i+3] == '"' {
				i += 4
			} else {
				i++
			}
		default:
			i++
		}
	}
	return i
}

// engineBlockStringEnd returns where graphql-go-tools' lexer (v2.18) ends a
// block string whose content starts at i: a backslash escapes the next quote
// (white space cancels it, another backslash undoes it), and any three
// unescaped quotes in a row close it.
func engineBlockStringEnd(q string, i int) int {
	escaped, quotes := false, 0
	for ; i < len(q); i++ {
		switch q[i] {
		case ' ', '\t', '\r', '\n':
			escaped, quotes = false, 0
		case '"':
			if escaped {
				escaped = false
				continue
			}
			quotes++
			if quotes == 3 {
				return i + 1
			}
		case '\\':
			escaped, quotes = !escaped, 0
		default:
			escaped, quotes = false, 0
		}
	}
	return i
}

// ScanJSON counts a JSON text's tokens (strings, numbers, literals and
// brackets; not colons and commas) and measures the nesting of its arrays and
// objects ({"a": [1]} is 2 deep), in one pass: brackets inside strings do not
// count. It does not check that the text is JSON: a decoder does that
// afterwards, and on a valid text the figures are exact.
func ScanJSON(b []byte) Text {
	var t Text
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '{' || c == '[':
			t.Tokens++
			depth++
			t.Nesting = max(t.Nesting, depth)
		case c == '}' || c == ']':
			t.Tokens++
			if depth > 0 {
				depth--
			}
		case c == '"':
			t.Tokens++
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':':
		default:
			// A number or a literal: one token for the run of its characters.
			t.Tokens++
			for i+1 < len(b) && !jsonDelimiter(b[i+1]) {
				i++
			}
		}
	}
	return t
}

func jsonDelimiter(c byte) bool {
	switch c {
	case '{', '}', '[', ']', '"', ' ', '\t', '\n', '\r', ',', ':':
		return true
	}
	return false
}
