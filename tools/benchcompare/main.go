// Command benchcompare is `make bench-compare REF=<commit>`: it builds vitola
// from the commit and from the working tree and runs the main benchmarks
// (router join, REST search at 100k, payments pair, identify one photo,
// import) against both, alternately, printing each metric as a ratio new/old
// with its spread. See package compare and docs/internals/benchmarks.md.
//
//	go run ./tools/benchcompare -ref 96e9e18 [-rounds 5] [-seconds 5] [-only search,payments]
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/vitolahq/vitola/tools/benchcompare/compare"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := compare.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	var help *compare.HelpError
	var usage *compare.UsageError
	switch {
	case errors.As(err, &help):
		fmt.Print(help.Text)
	case errors.As(err, &usage):
		fmt.Fprint(os.Stderr, usage.Text)
		fmt.Fprintln(os.Stderr, "benchcompare:", usage.Err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
}
