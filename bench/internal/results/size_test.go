package results

import "testing"

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1GiB", 1 << 30, true}, {"256MiB", 256 << 20, true}, {" 4 KiB ", 4 << 10, true}, {"4096", 4096, true},
		{"2MB", 2e6, true}, {"10B", 10, true},
		{"0", 0, false}, {"-1MiB", 0, false}, {"1TiB", 0, false}, {"lots", 0, false}, {"", 0, false},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
