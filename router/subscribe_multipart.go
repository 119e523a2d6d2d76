package router

// Multipart HTTP subscriptions, as Apollo Client sends them (Accept:
// multipart/mixed;subscriptionSpec=1.0): each event is a part
// {"payload": RESPONSE}, a heartbeat is the part {}, and the router's own
// endings are a part {"payload": null, "errors": [...]}.

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/vektah/gqlparser/v2/gqlerror"
)

// streaming reports whether a request asks for a stream of events, and in
// which framing: GraphQL over SSE (Accept names text/event-stream), or a
// multipart subscription (multipart/mixed with subscriptionSpec). Every
// request asks it: one that names neither type is told apart without
// allocating.
func streaming(r *http.Request) (framing, bool) {
	accept := r.Header.Values("Accept")
	maybe := false
	for _, v := range accept {
		v = strings.ToLower(v) // the same string when it is lower case already
		maybe = maybe || strings.Contains(v, MediaEventStream) || strings.Contains(v, "multipart/mixed")
	}
	if !maybe {
		return framing{}, false
	}
	var f framing
	found := false
	eachMediaRange(accept, func(typ, params string) {
		switch {
		case found:
		case typ == MediaEventStream:
			f, found = sse, true
		case typ == "multipart/mixed":
			eachParam(params, func(name, _ string) {
				if name == "subscriptionspec" {
					f, found = multipart, true
				}
			})
		}
	})
	return f, found
}

// multipartBoundary ends every part: a client reads a part once the next
// boundary has come, so each is sent right after its part.
const multipartBoundary = "\r\n--graphql"

// multipart frames Apollo's multipart subscriptions: the response starts with
// a heartbeat part, so that the client reads the headers at once.
var multipart = framing{
	protocol:    "multipart",
	contentType: `multipart/mixed;boundary="graphql";subscriptionSpec=1.0`,
	open:        []byte("\r\n--graphql\r\ncontent-type: application/json\r\n\r\n{}" + multipartBoundary),
	beat:        []byte("\r\ncontent-type: application/json\r\n\r\n{}" + multipartBoundary),
	next: func(payload []byte) [][]byte {
		return [][]byte{[]byte("\r\ncontent-type: application/json\r\n\r\n{\"payload\":"), payload, []byte("}" + multipartBoundary)}
	},
	complete: []byte("--\r\n"),
	dropped: func(code, msg string) [][]byte {
		b, _ := json.Marshal(map[string]any{"payload": nil, "errors": []*gqlerror.Error{{Message: msg, Extensions: map[string]any{"code": code}}}})
		return [][]byte{[]byte("\r\ncontent-type: application/json\r\n\r\n"), b, []byte(multipartBoundary + "--\r\n")}
	},
}
