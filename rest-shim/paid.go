package restshim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/apierr"
	"github.com/vitolahq/vitola/internal/idempotency"
	"github.com/vitolahq/vitola/internal/jsonbody"
	"github.com/vitolahq/vitola/internal/telemetry"
	"github.com/vitolahq/vitola/internal/trust"
	"github.com/vitolahq/vitola/subgraphs/subgraph"
)

// CreditsHeader carries a paid response's spendable balance after settlement.
const CreditsHeader = "X-Service-Ai-Credits-Remaining"

// maxPaidBody bounds a paid route's JSON body: image URLs and a prompt, or
// up to eight photos inline as data URLs. Matching takes an inline image of
// at most 1 MiB (imagefetch.DefaultMaxInlineBytes), whose base64 text is
// 1,398,104 bytes: eight are 11.2 MB, and the prompt and the JSON around
// them fit in the rest. The text is copied by every hop while the request
// runs (the shim, the internal calls, matching): a request of eight such
// photos allocates about 190 MB and four at once add about 320 MB to the
// server's memory, so inline images are kept far smaller than fetched ones
// (10 MiB: eight would make a 112 MB body).
const maxPaidBody = 12 << 20

var (
	opReserveCredits = subgraph.MustParse(`mutation ReserveCredits($amount: Int!, $reference: String!, $ttl: Int) {
  reserveCredits(amount: $amount, reference: $reference, ttlSeconds: $ttl) { id amount balance } }`)
	opSettleCredits = subgraph.MustParse(`mutation SettleCredits($id: ID!, $cost: Int!) {
  settleCredits(reservationId: $id, cost: $cost) { balance } }`)
	opReleaseCredits = subgraph.MustParse(`mutation ReleaseCredits($id: ID!) { releaseCredits(reservationId: $id) { balance } }`)
	opPriorHold      = subgraph.MustParse(`query PriorHold($reference: String!, $within: Int!) {
  creditReservation(reference: $reference, withinSeconds: $within) { id state balance } }`)
)

// Time budget of a paid request, counted from when it claimed its key. The
// work ends paidDeadline after that (a thorough identify: fetches of 15 s,
// fingerprints, a vision model of 30 s); settling then has a few short tries;
// the hold (holdSeconds after the start) outlives both, so it is never
// released by its expiry under a request still running; and the
// idempotency lease (2 minutes) outlives the hold, so a retry after a crash
// finds its credits back.
const (
	paidDeadline  = 90 * time.Second
	ledgerTimeout = 5 * time.Second
	holdSeconds   = 110
)

// paidWrite is the time a paid route has to answer: its work's deadline and
// the settlement's tries after it, beyond the server's usual write timeout.
const paidWrite = paidDeadline + 30*time.Second

// extendWriteDeadline gives a route slower by design d to write its answer
// when the server's write timeout (--write-timeout) is shorter; it never
// shortens it, nor sets one where the server has none.
func extendWriteDeadline(w http.ResponseWriter, r *http.Request, d time.Duration) {
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && (srv.WriteTimeout == 0 || srv.WriteTimeout >= d) {
		return
	}
	// Every writer between here and the connection unwraps (Unwrap), so
	// this reaches it.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}

// ledgerRetryDelays space the tries of a settlement: settling and releasing
// are idempotent in the ledger, so a try whose answer was lost is safe to
// repeat.
var ledgerRetryDelays = []time.Duration{0, 200 * time.Millisecond, time.Second}

// paidRoute is one paid route: it reads its body, names its price, and works.
type paidRoute struct {
	// name names the route in idempotency records (an alias shares its
	// route's records) and begins its holds' references in the ledger.
	name string
	// parse validates the body and returns the request and the most it can
	// cost: the credits held before any work. A client error is a *routeError.
	parse func(ctx context.Context, body []byte) (req any, price int64, err error)
	// work runs the request; cost is what it is charged (at most the price).
	work func(ctx context.Context, req any) (resp any, cost int64, err error)
}

// routeError is a client-facing REST error a route decided on.
type routeError struct {
	Status        int
	Code, Message string
	// RetryAfter, when set, is sent as Retry-After (seconds): the request
	// may be sent again, unchanged, then.
	RetryAfter int64
}

func (e *routeError) Error() string { return e.Message }

// write answers the error.
func (e *routeError) write(w http.ResponseWriter) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(e.RetryAfter, 10))
	}
	apierr.Write(w, e.Status, e.Code, e.Message)
}

// errUnsettled: the work was done but neither settling nor releasing its hold
// could be confirmed.
var errUnsettled = errors.New("the charge could not be settled or released")

// handlePaid runs a paid route: an Idempotency-Key is required, the price is
// held before any work, charged after success and given back after failure; a
// success is stored and replayed for the same key and body with no second
// charge. The key's identity (with api.ai) is in the context already.
func handlePaid(payments *subgraph.Client, idem *idempotency.Service, rt paidRoute, log zerolog.Logger) http.Handler {
	fail := func(w http.ResponseWriter, err error) {
		var re *routeError
		if errors.As(err, &re) {
			re.write(w)
			return
		}
		subgraphFailure(w, log, rt.name, err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		extendWriteDeadline(w, r, paidWrite)
		ctx := r.Context()
		caller, _ := trust.FromContext(ctx)
		// The body's media type and size first: nothing is recorded or held
		// for a request that is not JSON.
		body, err := jsonbody.Read(w, r, maxPaidBody)
		if err != nil {
			fail(w, bodyError(err, ""))
			return
		}
		key, ok := idempotencyKey(w, r)
		if !ok {
			return
		}
		req, price, err := rt.parse(ctx, body)
		if err != nil {
			fail(w, err)
			return
		}
		hash := idempotency.RequestHash(r.Method, rt.name, body)
		claim, ok := claimKey(w, r, idem, caller.KeyID, rt.name, key, body, log)
		if !ok {
			return
		}
		// From here the key is claimed: every way out finishes it, releases it,
		// or (when the charge is in doubt) keeps it until its lease lapses. A
		// client hanging up must not strand a hold half-way, so the work runs
		// on its own deadline.
		ctx = context.WithoutCancel(ctx)
		start := time.Now()
		// The hold's reference names this request (key and body), so a retry
		// finds what became of an earlier attempt's hold.
		ref := rt.name + ":" + key + ":" + hash[:16]
		balance, out, err := runPaid(ctx, payments, rt, req, price, paidAttempt{ref: ref, lookback: idem.Retention, start: start}, log)
		if errors.Is(err, errUnsettled) {
			log.Error().Str("route", rt.name).Msg("paid request: charge in doubt; its Idempotency-Key stays claimed until the lease lapses")
			apierr.Write(w, http.StatusServiceUnavailable, apierr.CodeUnavailable, "the charge for this request could not be confirmed; retry with the same Idempotency-Key in a few minutes")
			return
		}
		if err != nil {
			if rerr := idem.Release(ctx, claim); rerr != nil {
				log.Error().Err(rerr).Msg("release idempotency key")
			}
			fail(w, err)
			return
		}
		resp := idempotency.Response{Status: http.StatusOK, Header: map[string]string{
			"Content-Type": "application/json; charset=utf-8", CreditsHeader: strconv.FormatInt(balance, 10)}, Body: out}
		if err := idem.Finish(ctx, claim, resp); err != nil {
			log.Error().Err(err).Msg("store idempotent response") // the response still goes out
		}
		for k, v := range resp.Header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.Status)
		w.Write(resp.Body)
	})
}

// paidAttempt names one request's holds in the ledger: ref is the same for
// every attempt of the request, and holds older than lookback (the
// idempotency retention) belong to an earlier request that reused the key.
type paidAttempt struct {
	ref      string
	lookback time.Duration
	// start is when the request claimed its key: the time budget counts
	// from there.
	start time.Time
}

// priorHold is what became of an earlier attempt's hold: "" (none, or
// given back), "SETTLED" (it was charged) or "HELD"; balance is the
// spendable balance now.
func priorHold(ctx context.Context, payments *subgraph.Client, at paidAttempt) (id, state string, balance int64, err error) {
	var out struct {
		CreditReservation *struct {
			ID, State string
			Balance   int64
		}
	}
	within := max(1, int64(min(at.lookback, 7*24*time.Hour)/time.Second))
	if err := ledgerCall(ctx, payments, opPriorHold, map[string]any{"reference": at.ref, "within": within}, &out, len(ledgerRetryDelays)); err != nil {
		return "", "", 0, err
	}
	h := out.CreditReservation
	if h == nil || h.State == "RELEASED" {
		return "", "", 0, nil
	}
	return h.ID, h.State, h.Balance, nil
}

// earlierAttempt deals with the hold an earlier attempt of the same request
// may have left (its charge was in doubt, or its release failed): a held one
// is given back; a settled one means the request is paid for (paid, with the
// balance now).
func earlierAttempt(ctx context.Context, payments *subgraph.Client, at paidAttempt, log zerolog.Logger) (paid bool, balance int64, err error) {
	for try := 0; ; try++ {
		id, state, balance, err := priorHold(ctx, payments, at)
		switch {
		case err != nil:
			return false, 0, err
		case state == "SETTLED":
			log.Warn().Str("reservation", id).Msg("paid request: an earlier attempt was charged but its answer was lost; running it again without charging")
			return true, balance, nil
		case state != "HELD":
			return false, 0, nil
		}
		err = ledgerCall(ctx, payments, opReleaseCredits, map[string]any{"id": id}, nil, len(ledgerRetryDelays))
		if err == nil {
			return false, 0, nil
		}
		// Closed meanwhile (settled or expired): look again, once.
		var gerrs subgraph.Errors
		if errors.As(err, &gerrs) && gerrs.Code() == "RESERVATION_CLOSED" && try == 0 {
			continue
		}
		log.Error().Err(err).Str("reservation", id).Msg("release an earlier attempt's credits")
		return false, 0, errUnsettled
	}
}

// runPaid holds the price, works, and settles or releases; it returns the
// balance after settlement and the response body. An earlier attempt's hold
// is dealt with first (earlierAttempt): when it was charged, the request runs
// again without a second charge.
func runPaid(ctx context.Context, payments *subgraph.Client, rt paidRoute, req any, price int64, at paidAttempt, log zerolog.Logger) (int64, []byte, error) {
	paid, balance, err := earlierAttempt(ctx, payments, at, log.With().Str("route", rt.name).Logger())
	if err != nil {
		return 0, nil, err
	}
	if paid {
		body, _, err := work(ctx, rt, req, at)
		if err != nil {
			return 0, nil, err
		}
		return balance, body, nil
	}
	var hold struct {
		ReserveCredits struct {
			ID      string
			Balance int64
		}
	}
	// The hold ends holdSeconds after the request began, whatever the steps
	// before it took, so it still outlives the work and the settling.
	ttl := max(1, int64(math.Ceil((holdSeconds*time.Second - time.Since(at.start)).Seconds())))
	err = ledgerCall(ctx, payments, opReserveCredits, map[string]any{"amount": price, "reference": at.ref, "ttl": ttl}, &hold, 1)
	var gerrs subgraph.Errors
	if errors.As(err, &gerrs) && gerrs.Code() == "INSUFFICIENT_CREDITS" {
		balance, _ := gerrs[0].Extensions["balance"].(float64)
		return 0, nil, &routeError{Status: http.StatusPaymentRequired, Code: "insufficient_credits",
			Message: fmt.Sprintf("this request costs up to %d credits and the key has %d: add credits (vitola credits add --key KEY --amount N)", price, int64(balance))}
	}
	if err != nil {
		return 0, nil, err
	}
	holdID := hold.ReserveCredits.ID
	tel := telemetry.FromContext(ctx)
	tel.Credits("held", price)
	release := func() error {
		err := ledgerCall(ctx, payments, opReleaseCredits, map[string]any{"id": holdID}, nil, len(ledgerRetryDelays))
		if err != nil {
			// The hold is given back when it expires.
			log.Error().Err(err).Str("reservation", holdID).Msg("release credits")
		} else {
			tel.Credits("released", price)
		}
		return err
	}
	body, cost, err := work(ctx, rt, req, at)
	if err != nil {
		release()
		return 0, nil, err
	}
	var settled struct{ SettleCredits struct{ Balance int64 } }
	if err := ledgerCall(ctx, payments, opSettleCredits, map[string]any{"id": holdID, "cost": cost}, &settled, len(ledgerRetryDelays)); err != nil {
		log.Error().Err(err).Str("reservation", holdID).Msg("settle credits")
		// Released, the credits are back and the request may be retried;
		// otherwise the charge is in doubt.
		if release() != nil {
			return 0, nil, errUnsettled
		}
		return 0, nil, err
	}
	// Settling charges the cost and gives the rest of the hold back.
	tel.Credits("charged", cost)
	tel.Credits("released", price-cost)
	return settled.SettleCredits.Balance, body, nil
}

// work runs the route until paidDeadline after the request began and
// returns the response body.
func work(ctx context.Context, rt paidRoute, req any, at paidAttempt) ([]byte, int64, error) {
	ctx, cancel := context.WithDeadline(ctx, at.start.Add(paidDeadline))
	defer cancel()
	resp, cost, err := rt.work(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	body, err := json.Marshal(resp)
	if err != nil {
		return nil, 0, err
	}
	return append(body, '\n'), cost, nil
}

// ledgerCall calls the payments subgraph, each try on its own short deadline,
// trying again up to tries times when the call failed in transport (a GraphQL
// error is the ledger's answer, final).
func ledgerCall(ctx context.Context, payments *subgraph.Client, op *subgraph.Operation, vars map[string]any, out any, tries int) error {
	var err error
	for _, delay := range ledgerRetryDelays[:tries] {
		time.Sleep(delay)
		tctx, cancel := context.WithTimeout(ctx, ledgerTimeout)
		err = payments.Do(tctx, op, vars, out)
		cancel()
		var gerrs subgraph.Errors
		if err == nil || errors.As(err, &gerrs) {
			return err
		}
	}
	return err
}
