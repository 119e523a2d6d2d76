package telemetry

import "github.com/prometheus/client_golang/prometheus"

// Drop reasons of subscriptions the router ended itself (a bounded set).
const (
	DropSlowConsumer = "slow_consumer" // its send buffer was full
	DropWriteFailed  = "write_failed"  // a write to the client failed or timed out
	DropShutdown     = "shutdown"      // the server shut down
)

// subscriptionMetrics are the router's live subscriptions.
type subscriptionMetrics struct {
	active    *prometheus.GaugeVec
	delivered *prometheus.CounterVec
	drops     *prometheus.CounterVec
}

func newSubscriptionMetrics(reg *prometheus.Registry) *subscriptionMetrics {
	m := &subscriptionMetrics{
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vitola_graphql_subscriptions_active",
			Help: "GraphQL subscriptions open on this router replica, by protocol (ws: graphql-transport-ws, sse: GraphQL over SSE)."}, []string{"protocol"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_graphql_subscription_events_total",
			Help: "Subscription events delivered to clients, by protocol."}, []string{"protocol"}),
		drops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vitola_graphql_subscription_drops_total",
			Help: "Subscriptions the router ended itself, by reason: slow_consumer (its send buffer was full), write_failed, shutdown."}, []string{"reason"}),
	}
	reg.MustRegister(m.active, m.delivered, m.drops)
	for _, p := range []string{"ws", "sse"} { // a dashboard sees zeros from the start
		m.active.WithLabelValues(p)
		m.delivered.WithLabelValues(p)
	}
	for _, r := range []string{DropSlowConsumer, DropWriteFailed, DropShutdown} {
		m.drops.WithLabelValues(r)
	}
	return m
}

// SubscriptionActive adds delta (1 opened, -1 closed) to the open
// subscriptions of a protocol.
func (t *Telemetry) SubscriptionActive(protocol string, delta int) {
	if t == nil || t.Metrics == nil {
		return
	}
	t.Metrics.subs.active.WithLabelValues(protocol).Add(float64(delta))
}

// SubscriptionEvent records an event delivered to a client.
func (t *Telemetry) SubscriptionEvent(protocol string) {
	if t == nil || t.Metrics == nil {
		return
	}
	t.Metrics.subs.delivered.WithLabelValues(protocol).Inc()
}

// SubscriptionDropped records a subscription the router ended (reason: one
// of the Drop constants).
func (t *Telemetry) SubscriptionDropped(reason string) {
	if t == nil || t.Metrics == nil {
		return
	}
	t.Metrics.subs.drops.WithLabelValues(reason).Inc()
}
