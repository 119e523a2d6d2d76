// Command fedsubgraphs serves graphql-go-tools' federation test subgraphs
// (accounts, products, reviews: the ones issue 28's Cosmo figures were
// measured over) on loopback, for the router benchmark (make bench-router).
// It is a module of its own: those subgraphs' generated code needs the gqlgen
// their module pins, older than Vitola's.
//
// It writes their wgc-composed router config (the one graphql-go-tools' own
// gateway tests use) to the file named by its argument, listens on three free
// loopback ports and prints one line, `accounts=URL products=URL
// reviews=URL`, then serves until stdin closes.
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/wundergraph/graphql-go-tools/execution/federationtesting"
	accounts "github.com/wundergraph/graphql-go-tools/execution/federationtesting/accounts/graph"
	products "github.com/wundergraph/graphql-go-tools/execution/federationtesting/products/graph"
	reviews "github.com/wundergraph/graphql-go-tools/execution/federationtesting/reviews/graph"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: fedsubgraphs ROUTER-CONFIG-OUT")
	}
	if err := os.WriteFile(os.Args[1], federationtesting.RouterConfigJson, 0o644); err != nil {
		log.Fatal(err)
	}
	handlers := []struct {
		name string
		h    http.Handler
	}{
		{"accounts", accounts.GraphQLEndpointHandler(accounts.TestOptions)},
		{"products", products.GraphQLEndpointHandler(products.TestOptions)},
		{"reviews", reviews.GraphQLEndpointHandler(reviews.TestOptions)},
	}
	var line string
	for _, s := range handlers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		// HTTP/1.1 and HTTP/2 without TLS, for a router calling with h2c.
		var protocols http.Protocols
		protocols.SetHTTP1(true)
		protocols.SetUnencryptedHTTP2(true)
		srv := &http.Server{Handler: s.h, Protocols: &protocols}
		go func() { log.Fatal(srv.Serve(ln)) }()
		if line != "" {
			line += " "
		}
		line += fmt.Sprintf("%s=http://%s/", s.name, ln.Addr())
	}
	fmt.Println(line)
	io.Copy(io.Discard, os.Stdin) // until the benchmark goes away
}
