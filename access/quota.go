package access

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/vitolahq/vitola/internal/kv"
)

// Limits are a developer key's quotas: requests per second, and GraphQL cost
// per minute (the cost the router's limits measure before running an
// operation). In a Key a zero field means the platform's default; in
// QuotaConfig.Default it means no quota of that kind.
type Limits struct {
	RPS           int64 `json:"rps,omitempty"`
	CostPerMinute int64 `json:"costPerMinute,omitempty"`
}

// QuotaMode says what a quota does with a request over it.
type QuotaMode string

const (
	// QuotaEnforce refuses it: 429 rate_limited with Retry-After.
	QuotaEnforce QuotaMode = "enforce"
	// QuotaMeasure lets it through, logs and counts it: to learn what a
	// quota would refuse before turning it on.
	QuotaMeasure QuotaMode = "measure"
	// QuotaOff spends nothing and sends no RateLimit headers.
	QuotaOff QuotaMode = "off"
)

// ParseQuotaMode reads a --quota-mode value.
func ParseQuotaMode(s string) (QuotaMode, error) {
	switch m := QuotaMode(s); m {
	case QuotaEnforce, QuotaMeasure, QuotaOff:
		return m, nil
	}
	return "", fmt.Errorf("quota mode %q: want enforce, measure or off", s)
}

// QuotaConfig is the platform's quota setting.
type QuotaConfig struct {
	Default Limits
	Mode    QuotaMode // "" is QuotaEnforce
}

// The quota policies, as RateLimit headers name them.
const (
	PolicyRequests = "requests"
	PolicyCost     = "cost"
)

// Quotas spends developer keys' quotas in a kv.Store: Redis shares them
// between replicas, the in-process store serves one process. A nil *Quotas
// has no quotas.
type Quotas struct {
	store   kv.Store
	cfg     QuotaConfig
	log     zerolog.Logger
	observe func(policy string, enforced bool)
}

// NewQuotas returns the quotas of cfg over store.
func NewQuotas(store kv.Store, cfg QuotaConfig, log zerolog.Logger) *Quotas {
	if cfg.Mode == "" {
		cfg.Mode = QuotaEnforce
	}
	return &Quotas{store: store, cfg: cfg, log: log}
}

// Observe registers f, called for each request over a quota (enforced: it
// was refused; otherwise measure mode let it through): the metrics' hook.
func (q *Quotas) Observe(f func(policy string, enforced bool)) { q.observe = f }

// Verdict is what one quota said of one request.
type Verdict struct {
	// Refused is true when the request must be answered 429.
	Refused bool
	policy  string
	limit   int64
	window  time.Duration
	spent   kv.Spent
	cost    int64
}

// Requests spends one request of k's requests-per-second quota.
func (q *Quotas) Requests(ctx context.Context, k Key) Verdict {
	if q == nil {
		return Verdict{}
	}
	return q.spend(ctx, k, PolicyRequests, pick(k.Limits.RPS, q.cfg.Default.RPS), time.Second, 1)
}

// Cost spends an operation's cost from k's cost-per-minute quota.
func (q *Quotas) Cost(ctx context.Context, k Key, cost int) Verdict {
	if q == nil {
		return Verdict{}
	}
	return q.spend(ctx, k, PolicyCost, pick(k.Limits.CostPerMinute, q.cfg.Default.CostPerMinute), time.Minute, int64(cost))
}

func pick(own, def int64) int64 {
	if own > 0 {
		return own
	}
	return def
}

func (q *Quotas) spend(ctx context.Context, k Key, policy string, limit int64, window time.Duration, cost int64) Verdict {
	if q.cfg.Mode == QuotaOff || limit <= 0 || k.ID == "" {
		return Verdict{}
	}
	sp, err := q.store.Spend(ctx, "quota:"+policy+":"+k.ID, kv.Bucket{Limit: limit, Period: window}, cost)
	if err != nil {
		// A broken quota store must not lock every client out: let it through.
		q.log.Error().Err(err).Str("policy", policy).Msg("spend quota (request let through)")
		return Verdict{}
	}
	v := Verdict{policy: policy, limit: limit, window: window, spent: sp, cost: cost}
	if !sp.OK {
		enforced := q.cfg.Mode == QuotaEnforce
		v.Refused = enforced
		ev := q.log.Info()
		if !enforced {
			ev = q.log.Warn()
		}
		ev.Str("key", k.ID).Str("policy", policy).Int64("limit", limit).Int64("cost", cost).
			Bool("refused", enforced).Msg("over quota")
		if q.observe != nil {
			q.observe(policy, enforced)
		}
	}
	return v
}

// SetHeaders adds the verdict's policy and state to the IETF RateLimit-Policy
// and RateLimit fields (draft-ietf-httpapi-ratelimit-headers): q is the quota,
// w its window in seconds, r what remains and t the seconds until the quota
// is whole again. A cost quota names its unit.
func (v Verdict) SetHeaders(h http.Header) {
	if v.policy == "" {
		return
	}
	unit := ""
	if v.policy == PolicyCost {
		unit = `;qu="graphql-cost"`
	}
	appendItem(h, "RateLimit-Policy", fmt.Sprintf("%q;q=%d;w=%d%s", v.policy, v.limit, int64(v.window/time.Second), unit))
	appendItem(h, "RateLimit", fmt.Sprintf("%q;r=%d;t=%d", v.policy, v.spent.Remaining, seconds(v.spent.Reset)))
	if v.Refused && v.spent.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(seconds(v.spent.RetryAfter), 10))
	}
}

// appendItem adds an item to a structured-field list on one line, so that
// clients reading only a field's first line see every policy.
func appendItem(h http.Header, name, item string) {
	if old := h.Get(name); old != "" {
		item = old + ", " + item
	}
	h.Set(name, item)
}

// seconds rounds up: a client told to wait 0 s would retry at once.
func seconds(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }

// Code is the stable code of a refusal (REST's error, GraphQL's
// extensions.code in capitals).
const CodeRateLimited = "rate_limited"

// Message says why a refused request was refused and what to do.
func (v Verdict) Message() string {
	switch {
	case v.policy == PolicyCost && v.spent.RetryAfter == 0:
		return fmt.Sprintf("this operation's cost of %d is more than this key's whole quota of %d per minute: ask for fewer items, or ask the operator to raise the key's limit (vitola keys limits set)", v.cost, v.limit)
	case v.policy == PolicyCost:
		return fmt.Sprintf("this key has spent its GraphQL cost quota of %d per minute: retry after %d s (Retry-After), or ask for fewer items", v.limit, seconds(v.spent.RetryAfter))
	default:
		return fmt.Sprintf("this key has sent more than its quota of %d requests per second: retry after %d s (Retry-After), and spread requests out", v.limit, seconds(v.spent.RetryAfter))
	}
}

// GraphQLCode is CodeRateLimited as GraphQL's extensions.code spells codes.
var GraphQLCode = strings.ToUpper(CodeRateLimited)
