// Package latency reads the percentiles of latencies a benchmark measured, by one rule for
// every benchmark of the suite so their p50 and p99 compare.
package latency

import "time"

// Percentile returns the p-quantile (p from 0 to 1; 0.99 is the p99) of sorted, an ascending
// slice (slices.Sort it first): the element at p·(n−1), rounded down, so 1 is the maximum.
// An empty slice gives 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1))]
}
