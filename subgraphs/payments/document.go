package payments

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/vitolahq/vitola/internal/timestamp"
)

// Document is a resource's JSON as the payments API shows it, rendered by
// the subgraph in one piece: the shim passes it on without a field-by-field
// GraphQL selection (what a payment session's create and status cost most).
type Document json.RawMessage

// MarshalGQL writes the document as it is.
func (d Document) MarshalGQL(w io.Writer) { w.Write(d) }

// UnmarshalGQL refuses input: documents are output only.
func (d *Document) UnmarshalGQL(any) error { return errors.New("documents are output only") }

// SessionDocument renders a session and its purchase at now as the fields
// of PaymentSession and Purchase show them, in the schema's order, with null
// for what is absent: what selecting every field would answer, written in
// one pass. A create keeps it to answer its retries as it answered first.
func SessionDocument(s *Session, p *Purchase, now time.Time) Document {
	b := make([]byte, 0, 640)
	b = appendString(append(b, `{"id":`...), s.ID)
	b = appendString(append(b, `,"state":`...), s.StateAt(now))
	b = appendString(append(b, `,"billingAccountId":`...), s.AccountID)
	b = appendString(append(b, `,"offerId":`...), s.OfferID)
	b = appendString(append(b, `,"returnUrl":`...), s.ReturnURL)
	b = appendString(append(b, `,"cancelUrl":`...), s.CancelURL)
	b = appendOptional(append(b, `,"parentOrigin":`...), s.ParentOrigin)
	b = appendTime(append(b, `,"expiresAt":`...), &s.ExpiresAt)
	b = appendTime(append(b, `,"createdAt":`...), &s.CreatedAt)
	b = appendTime(append(b, `,"redeemedAt":`...), s.RedeemedAt)
	b = appendTime(append(b, `,"closedAt":`...), s.ClosedAt)
	b = appendString(append(b, `,"purchase":{"id":`...), p.ID)
	b = appendString(append(b, `,"kind":`...), p.Kind)
	b = appendString(append(b, `,"state":`...), p.State)
	b = appendString(append(b, `,"resourceType":`...), p.ResourceType)
	b = strconv.AppendInt(append(b, `,"quantity":`...), p.Quantity, 10)
	b = strconv.AppendInt(append(b, `,"price":{"amount":`...), p.Amount, 10)
	b = appendString(append(b, `,"currency":`...), p.Currency)
	b = appendOptional(append(b, `},"failureCode":`...), p.FailureCode)
	b = appendOptional(append(b, `,"failureMessage":`...), p.FailureMessage)
	b = appendTime(append(b, `,"createdAt":`...), &p.CreatedAt)
	b = appendTime(append(b, `,"updatedAt":`...), &p.UpdatedAt)
	return Document(append(b, "}}"...))
}

// appendString appends s as a JSON string: as it is when it holds nothing
// JSON escapes (IDs, states, times, most URLs), else as encoding/json
// writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// appendOptional appends s as a JSON string, or null when it is empty.
func appendOptional(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

// appendTime appends t as an RFC 3339 timestamp string, or null.
func appendTime(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return append(timestamp.Append(append(b, '"'), *t), '"')
}
