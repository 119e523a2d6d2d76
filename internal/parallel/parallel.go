// Package parallel runs independent pieces of work on every core.
package parallel

import (
	"runtime"
	"sync"
)

// Each calls f(0), …, f(n-1) from GOMAXPROCS goroutines and returns when all
// have returned. f must be safe to call concurrently.
func Each(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
