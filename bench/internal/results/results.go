// Package results holds what the benchmark programs under bench/ share:
// the median of repeated runs, writing a run's rows as the JSON file
// their --json flag names, and reading their size flags.
package results

import (
	"encoding/json"
	"os"
	"slices"
)

// Median is the median of xs (0 for none); xs is left as it was.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	n := len(s)
	return (s[n/2-1] + s[n/2]) / 2
}

// WriteJSON writes v, indented, with a final newline, to the file name.
func WriteJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o644)
}
