package imagefetch_test

import (
	"context"
	"encoding/binary"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vitolahq/vitola/subgraphs/matching/imagefetch"
)

// fakeDNS starts a UDP DNS responder on loopback that answers every A query
// with answer (and every other query with no records; every query with "no
// such name" when answer is the zero Addr), and returns a resolver
// that asks only it, and the number of queries it got.
func fakeDNS(t *testing.T, answer netip.Addr) (*net.Resolver, *atomic.Int32) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	var queries atomic.Int32
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n], answer); resp != nil {
				queries.Add(1)
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	resolver := &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", pc.LocalAddr().String())
		},
	}
	return resolver, &queries
}

// dnsAnswer answers query q (RFC 1035 4.1): header, the question copied, and
// for an A query one record pointing back at the question's name.
func dnsAnswer(q []byte, answer netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	i := 12
	for i < len(q) && q[i] != 0 {
		i += int(q[i]) + 1
	}
	i++ // the root label
	if i+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i:])
	resp := make([]byte, 12, 64)
	copy(resp, q[:2])             // ID
	resp[2], resp[3] = 0x85, 0x80 // response, authoritative, recursion desired and available, no error
	binary.BigEndian.PutUint16(resp[4:], 1)
	resp = append(resp, q[12:i+4]...)
	if !answer.IsValid() {
		resp[3] |= 3 // NXDOMAIN
		return resp
	}
	if qtype == 1 { // A
		binary.BigEndian.PutUint16(resp[6:], 1)
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4) // name at offset 12, A, IN, TTL 0, 4 bytes
		a := answer.As4()
		resp = append(resp, a[:]...)
	}
	return resp
}

// TestFetchChecksAddressAfterResolution proves a host name is judged by the
// address it resolves to, at connect time: rebind.test exists only in the fake
// DNS, so a fetch that got that far used the resolver and the Control check.
func TestFetchChecksAddressAfterResolution(t *testing.T) {
	img := pngBytes(t, 3, 2)
	target, targetHits := serve(t, body("image/png", img))
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	rebindURL := "http://rebind.test:" + port + "/band.png"
	redirector, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, rebindURL, http.StatusFound)
	})

	tests := []struct {
		name    string
		answer  string
		allow   bool // 127.0.0.1/32 allowed
		url     string
		wantErr []string // code then message parts; nil for success
	}{
		{"private answer", "10.1.2.3", false, rebindURL, []string{imagefetch.CodeAddressBlocked, "rebind.test", "private"}},
		{"loopback answer", "127.0.0.1", false, rebindURL, []string{imagefetch.CodeAddressBlocked, "rebind.test", "loopback"}},
		{"metadata answer", "169.254.169.254", false, rebindURL, []string{imagefetch.CodeAddressBlocked, "rebind.test", "link-local"}},
		{"redirect to a name that resolves privately", "10.1.2.3", true, redirector.URL, []string{imagefetch.CodeAddressBlocked, "rebind.test", "private"}},
		{"allowed answer", "127.0.0.1", true, rebindURL, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := targetHits.Load()
			resolver, queries := fakeDNS(t, netip.MustParseAddr(tt.answer))
			cfg := imagefetch.Config{Resolver: resolver}
			if tt.allow {
				cfg = loopback()
				cfg.Resolver = resolver
			}
			got, err := imagefetch.New(cfg).Fetch(t.Context(), tt.url)
			if queries.Load() == 0 {
				t.Error("the fake DNS server got no query")
			}
			if tt.wantErr != nil {
				e := wantError(t, err, tt.wantErr[0], tt.wantErr[1:]...)
				// What the platform's DNS says about a name is not the
				// user's to learn (an internal name's address).
				if strings.Contains(e.Message, tt.answer) {
					t.Errorf("message names the resolved address %s: %s", tt.answer, e.Message)
				}
				if n := targetHits.Load() - before; n != 0 {
					t.Errorf("the image server got %d requests, want none", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Width != 3 || got.Height != 2 || !strings.HasPrefix(got.URL, "http://rebind.test:") {
				t.Errorf("got %dx%d from %s", got.Width, got.Height, got.URL)
			}
		})
	}
}
