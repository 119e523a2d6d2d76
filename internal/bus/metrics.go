package bus

import "github.com/prometheus/client_golang/prometheus"

// Collectors report b's Stats as Prometheus metrics (vitola_live_*), read
// when scraped.
func Collectors(b Bus) []prometheus.Collector {
	stat := func(f func(Stats) int64) func() float64 { return func() float64 { return float64(f(b.Stats())) } }
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "vitola_live_events_published_total",
			Help: "Live events (sessions started, tokens revoked) this replica handed to the bus."}, stat(func(s Stats) int64 { return s.Published })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "vitola_live_events_lost_total",
			Help: "Live events this replica could not publish (Redis down or slow): the write was saved, its live event lost."}, stat(func(s Stats) int64 { return s.PublishFailed })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "vitola_live_events_delivered_total",
			Help: "Live events put in a subscription's buffer on this replica."}, stat(func(s Stats) int64 { return s.Delivered })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "vitola_live_subscribers_dropped_total",
			Help: "Subscriptions ended on this replica because they fell behind (their buffer was full)."}, stat(func(s Stats) int64 { return s.Dropped })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vitola_live_subscribers",
			Help: "Bus subscriptions open on this replica (a mySmokeSessionStarted stream holds two: sessions and revocations)."}, stat(func(s Stats) int64 { return s.Subscribers })),
	}
}
