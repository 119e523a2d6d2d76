package restshim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/apierr"
	"github.com/vitolahq/vitola/idempotency"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
	"github.com/vitolahq/vitola/trust"
)

// CreditsHeader carries a paid response's spendable balance after settlement.
const CreditsHeader = "X-Service-Ai-Credits-Remaining"

// maxPaidBody bounds a paid route's JSON body (image URLs, a prompt).
const maxPaidBody = 64 << 10

var (
	opReserveCredits = subgraph.MustParse(`mutation ReserveCredits($amount: Int!, $reference: String!, $ttl: Int) {
  reserveCredits(amount: $amount, reference: $reference, ttlSeconds: $ttl) { id amount balance } }`)
	opSettleCredits = subgraph.MustParse(`mutation SettleCredits($id: ID!, $cost: Int!) {
  settleCredits(reservationId: $id, cost: $cost) { balance } }`)
	opReleaseCredits = subgraph.MustParse(`mutation ReleaseCredits($id: ID!) { releaseCredits(reservationId: $id) { balance } }`)
)

// holdSeconds is how long a paid request's hold lives if the request dies before
// settling: longer than any request runs, shorter than the idempotency lease, so
// a retry after a crash finds its credits back.
const holdSeconds = 110

// paidRoute is one paid route: it reads its body, names its price, and works.
type paidRoute struct {
	// name is the ledger's reference for the route's holds.
	name string
	// parse validates the body and returns the request and the credits to hold.
	parse func(body []byte) (req any, price int64, err *routeError)
	// work runs the request; cost is what it is charged (at most the price).
	work func(ctx context.Context, req any) (resp any, cost int64, err error)
}

// routeError is a client-facing REST error a route decided on.
type routeError struct {
	Status        int
	Code, Message string
}

func (e *routeError) Error() string { return e.Message }

// handlePaid runs a paid route: an Idempotency-Key is required, the price is
// held before any work, charged after success and given back after failure; a
// success is stored and replayed for the same key and body with no second
// charge. The key's identity (with api.ai) is in the context already.
func handlePaid(payments *subgraph.Client, idem *idempotency.Service, rt paidRoute, log zerolog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		caller, _ := trust.FromContext(ctx)
		key := r.Header.Get("Idempotency-Key")
		if !idempotency.ValidKey(key) {
			apierr.Write(w, http.StatusBadRequest, "idempotency_key_required", idempotency.ErrInvalid.Error())
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPaidBody))
		if err != nil {
			apierr.Write(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the JSON body must be at most %d bytes", maxPaidBody))
			return
		}
		req, price, perr := rt.parse(body)
		if perr != nil {
			apierr.Write(w, perr.Status, perr.Code, perr.Message)
			return
		}
		outcome, stored, err := idem.Begin(ctx, caller.KeyID, key, idempotency.RequestHash(r.Method, r.URL.Path, body))
		switch {
		case err != nil:
			log.Error().Err(err).Msg("idempotency claim")
			apierr.Write(w, http.StatusServiceUnavailable, apierr.CodeUnavailable, "the request could not be recorded; try again shortly")
			return
		case outcome == idempotency.InFlight:
			apierr.Write(w, http.StatusConflict, "idempotency_key_in_use", "a request with this Idempotency-Key is still running; retry when it has finished")
			return
		case outcome == idempotency.Mismatch:
			apierr.Write(w, http.StatusUnprocessableEntity, "idempotency_key_reused", "this Idempotency-Key was used with a different request; use a new key for a new request")
			return
		case outcome == idempotency.Replay:
			for k, v := range stored.Header {
				w.Header().Set(k, v)
			}
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(stored.Status)
			w.Write(stored.Body)
			return
		}
		// From here the key is claimed: every way out either finishes it or
		// releases it, and releases the hold unless it was settled.
		ctx = context.WithoutCancel(ctx) // a client hanging up must not strand a hold half-way
		balance, out, err := runPaid(ctx, payments, rt, req, price)
		if err != nil {
			if rerr := idem.Release(ctx, caller.KeyID, key); rerr != nil {
				log.Error().Err(rerr).Msg("release idempotency key")
			}
			var re *routeError
			if errors.As(err, &re) {
				apierr.Write(w, re.Status, re.Code, re.Message)
				return
			}
			subgraphFailure(w, log, rt.name, err)
			return
		}
		resp := idempotency.Response{Status: http.StatusOK, Header: map[string]string{
			"Content-Type": "application/json; charset=utf-8", CreditsHeader: strconv.FormatInt(balance, 10)}, Body: out}
		if err := idem.Finish(ctx, caller.KeyID, key, resp); err != nil {
			log.Error().Err(err).Msg("store idempotent response") // the response still goes out
		}
		for k, v := range resp.Header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.Status)
		w.Write(resp.Body)
	})
}

// runPaid holds the price, works, and settles or releases; it returns the
// balance after settlement and the response body.
func runPaid(ctx context.Context, payments *subgraph.Client, rt paidRoute, req any, price int64) (int64, []byte, error) {
	var hold struct {
		ReserveCredits struct {
			ID      string
			Balance int64
		}
	}
	err := payments.Do(ctx, opReserveCredits, map[string]any{"amount": price, "reference": rt.name, "ttl": holdSeconds}, &hold)
	var gerrs subgraph.Errors
	if errors.As(err, &gerrs) && gerrs.Code() == "INSUFFICIENT_CREDITS" {
		balance, _ := gerrs[0].Extensions["balance"].(float64)
		return 0, nil, &routeError{http.StatusPaymentRequired, "insufficient_credits",
			fmt.Sprintf("this request costs %d credits and the key has %d: add credits (vitola credits add --key KEY --amount N)", price, int64(balance))}
	}
	if err != nil {
		return 0, nil, err
	}
	holdID := hold.ReserveCredits.ID
	release := func() {
		// A release that fails leaves the hold to expire: it is given back then.
		payments.Do(ctx, opReleaseCredits, map[string]any{"id": holdID}, nil)
	}
	resp, cost, err := rt.work(ctx, req)
	if err != nil {
		release()
		return 0, nil, err
	}
	body, err := json.Marshal(resp)
	if err != nil {
		release()
		return 0, nil, err
	}
	var settled struct{ SettleCredits struct{ Balance int64 } }
	if err := payments.Do(ctx, opSettleCredits, map[string]any{"id": holdID, "cost": cost}, &settled); err != nil {
		release()
		return 0, nil, err
	}
	return settled.SettleCredits.Balance, append(body, '\n'), nil
}
