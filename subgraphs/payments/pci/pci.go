// Package pci is the payments subgraph's card route: the only handler of the
// platform that reads raw card data. It lives outside GraphQL on purpose (a
// GraphQL server may log or cache variables; this handler never logs, caches
// or returns a request body), takes the card from the shim's PCI route, hands
// it to the gateway's vault through payments.Service.AddCard, and answers the
// saved method: brand, last four, expiry, never the number or the CVC.
package pci

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/jsonbody"
	"github.com/vitolahq/vitola/internal/timestamp"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/payments"
)

// Path is the card route on the payments subgraph.
const Path = "/pci/payment-methods"

// MaxBody bounds a card request.
const MaxBody = 4 << 10

// Method is a saved card as every response shows it.
type Method struct {
	ID        string `json:"id"`
	Brand     string `json:"brand"`
	Last4     string `json:"last4"`
	ExpMonth  int    `json:"expMonth"`
	ExpYear   int    `json:"expYear"`
	IsDefault bool   `json:"isDefault"`
	CreatedAt string `json:"createdAt"`
}

// Show is the public view of a saved card.
func Show(pm *payments.PaymentMethod) Method {
	return Method{ID: pm.ID, Brand: pm.Brand, Last4: pm.Last4, ExpMonth: pm.ExpMonth, ExpYear: pm.ExpYear, IsDefault: pm.Default, CreatedAt: timestamp.Format(pm.CreatedAt)}
}

// NewHandler serves POST Path for the checkout session in the internal
// token (the shim puts the browser's session there).
func NewHandler(svc *payments.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := trust.FromContext(r.Context())
		if id.Caller != "shim" || id.CheckoutSession == "" || id.CheckoutAccount == "" {
			apierr.Write(w, http.StatusForbidden, apierr.CodeForbidden, "cards are taken only for a hosted checkout session")
			return
		}
		body, err := jsonbody.Read(w, r, MaxBody)
		var in struct {
			Number      string `json:"number"`
			ExpMonth    int    `json:"expMonth"`
			ExpYear     int    `json:"expYear"`
			CVC         string `json:"cvc"`
			Name        string `json:"name"`
			MakeDefault bool   `json:"makeDefault"`
		}
		if err == nil {
			err = jsonbody.Decode(body, &in)
		}
		clear(body)
		var je *jsonbody.Error
		if errors.As(err, &je) {
			apierr.Write(w, je.Status, je.Code, "the card: "+je.Message)
			return
		}
		if err != nil {
			apierr.Write(w, http.StatusBadRequest, jsonbody.CodeInvalid, "the card could not be read: send it again")
			return
		}
		pm, err := svc.AddCard(r.Context(), id.CheckoutSession, id.CheckoutAccount, payments.CardInput{Number: in.Number, ExpMonth: in.ExpMonth,
			ExpYear: in.ExpYear, CVC: in.CVC, Name: in.Name, MakeDefault: in.MakeDefault})
		in.Number, in.CVC = "", ""
		var coded *payments.CodedError
		switch {
		case errors.As(err, &coded):
			status := map[string]int{payments.CodeHostedSessionInvalid: http.StatusUnauthorized, payments.CodeCardDeclined: http.StatusPaymentRequired,
				payments.CodeMerchantNotReady: http.StatusConflict}[coded.Code]
			apierr.Write(w, max(status, http.StatusBadRequest), coded.Code, coded.Message)
			return
		case errors.Is(err, payments.ErrInvalid):
			apierr.Write(w, http.StatusBadRequest, "invalid_card", err.Error()[len(payments.ErrInvalid.Error())+2:])
			return
		case err != nil:
			// Never the error's text: a gateway's error could echo what it was sent.
			apierr.Write(w, http.StatusBadGateway, apierr.CodeUnavailable, "the card could not be saved now; try again shortly")
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"data": Show(pm)})
	})
}
