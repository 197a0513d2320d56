package results

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), c.in...)
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("Median reordered its input: %v", c.in)
			}
		}
	}
}

func TestWriteJSON(t *testing.T) {
	name := filepath.Join(t.TempDir(), "out.json")
	if err := WriteJSON(name, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil || string(b) != "{\n  \"a\": 1\n}\n" {
		t.Fatalf("wrote %q, %v", b, err)
	}
}
