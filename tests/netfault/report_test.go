package netfault

import (
	"bytes"
	"fmt"
	"slices"
	"text/tabwriter"
)

// summary is one TestNemesis run, as -summary writes it.
type summary struct {
	Seed           uint64        `json:"seed"`
	Faults         []faultRecord `json:"faults"`
	Baseline       float64       `json:"baseline_acked_ops_per_sec"`
	Attempted      int64         `json:"attempted"`
	Acknowledged   int64         `json:"acknowledged"`
	LongestStall   float64       `json:"longest_stall_s"`
	NamespaceOps   int           `json:"namespace_ops"`
	Linearizable   bool          `json:"linearizable"`
	Unchecked      int           `json:"epochs_not_checked"` // porcupine timed out
	NamespaceIndex uint64        `json:"converged_at_index"`
	Files          int64         `json:"files_acknowledged"`
	FilesLost      int           `json:"files_lost"`
	LengthFiles    int           `json:"hflush_files"`
	LengthFlushes  int           `json:"hflushes_acknowledged"`
	// files whose writer failed and kept them open: none may be recovered
	LengthAbandoned int          `json:"hflush_files_abandoned_open"`
	Tokens          tokenVerdict `json:"tokens"`
	HealToFull      float64      `json:"heal_to_full_replication_s"`
	Anomalies       []string     `json:"anomalies"`
}

// byKind groups the faults: kind -> records, in kind order.
func (s *summary) byKind() ([]string, map[string][]faultRecord) {
	m := map[string][]faultRecord{}
	for _, r := range s.Faults {
		m[r.Kind] = append(m[r.Kind], r)
	}
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds, m
}

// table is the faults by kind: how many, and the median and lowest
// availability during them.
func (s *summary) table() string {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "fault\tcount\tacked ops/s during (median)\tavailability (median)\t(lowest)\n")
	kinds, m := s.byKind()
	for _, k := range kinds {
		var ops, av []float64
		for _, r := range m[k] {
			ops, av = append(ops, r.OpsPerSec), append(av, r.Avail)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\n", k, len(m[k]), median(ops), median(av), slices.Min(av))
	}
	fmt.Fprintf(tw, "baseline (no fault)\t-\t%.0f\t1.00\t\n", s.Baseline)
	tw.Flush()
	return b.String()
}

// line is the run in one sentence.
func (s *summary) line() string {
	lin := "linearizable"
	if !s.Linearizable {
		lin = "NOT linearizable"
	}
	return fmt.Sprintf("%d faults; %d ops attempted, %d acknowledged, longest stall without an acknowledgment %.2f s; "+
		"namespace: %d ops, %s, converged at index %d; files: %d acknowledged, %d lost; hflush: %d files, %d flushes acknowledged, %d left open; "+
		"tokens: %d asked, %d issued, %d accepted, %d asked of a namenode cut off, %d issued by one, %d expired replayed; heal to full replication %.1f s; %d anomalies",
		len(s.Faults), s.Attempted, s.Acknowledged, s.LongestStall, s.NamespaceOps, lin, s.NamespaceIndex, s.Files, s.FilesLost,
		s.LengthFiles, s.LengthFlushes, s.LengthAbandoned, s.Tokens.Asked, s.Tokens.Issued, s.Tokens.Accepted, s.Tokens.AskedWhileCut, s.Tokens.IssuedWhileCut, s.Tokens.ExpiredReplayed,
		s.HealToFull, len(s.Anomalies))
}
