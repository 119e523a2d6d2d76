// Command gen writes the demo evidence (make evidence): every demo line's band,
// rendered and fingerprinted.
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/vitolahq/vitola/subgraphs/matching/evidence"
)

func main() {
	var buf bytes.Buffer
	err := evidence.GenerateDemo(&buf, func(done, total int) {
		if done%25 == 0 || done == total {
			fmt.Fprintf(os.Stderr, "%d/%d demo bands\n", done, total)
		}
	})
	if err == nil {
		err = os.WriteFile("subgraphs/matching/evidence/demo.jsonl.gz", buf.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	fmt.Println("wrote subgraphs/matching/evidence/demo.jsonl.gz")
}
