package graph

import (
	"encoding/json"
	"strconv"

	"github.com/vitolahq/vitola/subgraphs/payments"
	"github.com/vitolahq/vitola/subgraphs/payments/graph/model"
)

// sessionDocument renders a session and its purchase as the fields of
// PaymentSession and Purchase show them, in the schema's order, with null
// for what is absent: what selecting every field would answer, written in
// one pass instead of one resolved field at a time.
func sessionDocument(s *model.PaymentSession) payments.Document {
	b := make([]byte, 0, 640)
	b = append(b, `{"id":`...)
	b = appendString(b, s.ID)
	b = appendString(append(b, `,"state":`...), s.State)
	b = appendString(append(b, `,"billingAccountId":`...), s.BillingAccountID)
	b = appendString(append(b, `,"offerId":`...), s.OfferID)
	b = appendString(append(b, `,"returnUrl":`...), s.ReturnURL)
	b = appendString(append(b, `,"cancelUrl":`...), s.CancelURL)
	b = appendOptional(append(b, `,"parentOrigin":`...), s.ParentOrigin)
	b = appendString(append(b, `,"expiresAt":`...), s.ExpiresAt)
	b = appendString(append(b, `,"createdAt":`...), s.CreatedAt)
	b = appendOptional(append(b, `,"redeemedAt":`...), s.RedeemedAt)
	b = appendOptional(append(b, `,"closedAt":`...), s.ClosedAt)
	p := s.Purchase
	b = appendString(append(b, `,"purchase":{"id":`...), p.ID)
	b = appendString(append(b, `,"kind":`...), p.Kind)
	b = appendString(append(b, `,"state":`...), p.State)
	b = appendString(append(b, `,"resourceType":`...), p.ResourceType)
	b = strconv.AppendInt(append(b, `,"quantity":`...), p.Quantity, 10)
	b = strconv.AppendInt(append(b, `,"price":{"amount":`...), p.Price.Amount, 10)
	b = appendString(append(b, `,"currency":`...), p.Price.Currency)
	b = appendOptional(append(b, `},"failureCode":`...), p.FailureCode)
	b = appendOptional(append(b, `,"failureMessage":`...), p.FailureMessage)
	b = appendString(append(b, `,"createdAt":`...), p.CreatedAt)
	b = appendString(append(b, `,"updatedAt":`...), p.UpdatedAt)
	return payments.Document(append(b, "}}"...))
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

// appendOptional appends s as a JSON string, or null.
func appendOptional(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}
