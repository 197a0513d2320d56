// Package cliflag registers command-line flags that also read an
// environment variable, so every server flag can be set either way (flags
// win). The variable's name is shown in --help.
package cliflag

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/blockfs/blockfs/security"
)

// Set wraps a FlagSet with an environment prefix, e.g. "BLOCKFS_NN_".
type Set struct {
	FS     *flag.FlagSet
	Prefix string
	errs   []error
}

// New returns a Set over fs.
func New(fs *flag.FlagSet, prefix string) *Set { return &Set{FS: fs, Prefix: prefix} }

func (s *Set) env(name string) (string, string, bool) {
	key := s.Prefix + envName(name)
	v, ok := os.LookupEnv(key)
	return key, v, ok
}

func envName(flagName string) string {
	b := []byte(flagName)
	for i, c := range b {
		switch {
		case c == '-':
			b[i] = '_'
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// String registers a string flag.
func (s *Set) String(p *string, name, def, usage string) {
	key, v, ok := s.env(name)
	if ok {
		def = v
	}
	s.FS.StringVar(p, name, def, fmt.Sprintf("%s [$%s]", usage, key))
}

// Bool registers a bool flag.
func (s *Set) Bool(p *bool, name string, def bool, usage string) {
	key, v, ok := s.env(name)
	if ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("$%s: %w", key, err))
		} else {
			def = b
		}
	}
	s.FS.BoolVar(p, name, def, fmt.Sprintf("%s [$%s]", usage, key))
}

// Int registers an int flag.
func (s *Set) Int(p *int, name string, def int, usage string) {
	key, v, ok := s.env(name)
	if ok {
		i, err := strconv.Atoi(v)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("$%s: %w", key, err))
		} else {
			def = i
		}
	}
	s.FS.IntVar(p, name, def, fmt.Sprintf("%s [$%s]", usage, key))
}

// Uint64 registers a uint64 flag.
func (s *Set) Uint64(p *uint64, name string, def uint64, usage string) {
	key, v, ok := s.env(name)
	if ok {
		i, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("$%s: %w", key, err))
		} else {
			def = i
		}
	}
	s.FS.Uint64Var(p, name, def, fmt.Sprintf("%s [$%s]", usage, key))
}

// Int64 registers an int64 flag.
func (s *Set) Int64(p *int64, name string, def int64, usage string) {
	key, v, ok := s.env(name)
	if ok {
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("$%s: %w", key, err))
		} else {
			def = i
		}
	}
	s.FS.Int64Var(p, name, def, fmt.Sprintf("%s [$%s]", usage, key))
}

// Float64 registers a float64 flag.
func (s *Set) Float64(p *float64, name string, def float64, usage string) {
	key, v, ok := s.env(name)
	if ok {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("$%s: %w", key, err))
		} else {
			def = x
		}
	}
	s.FS.Float64Var(p, name, def, fmt.Sprintf("%s [$%s]", usage, key))
}

// Duration registers a duration flag.
func (s *Set) Duration(p *time.Duration, name string, def time.Duration, usage string) {
	key, v, ok := s.env(name)
	if ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("$%s: %w", key, err))
		} else {
			def = d
		}
	}
	s.FS.DurationVar(p, name, def, fmt.Sprintf("%s [$%s]", usage, key))
}

// Parse parses args; a malformed environment value is an error too.
func (s *Set) Parse(args []string) error {
	if len(s.errs) > 0 {
		return s.errs[0]
	}
	return s.FS.Parse(args)
}

// Logger returns a text slog.Logger on stderr at the named level (debug,
// info, warn, error), as the servers' --log-level flag gives it.
func Logger(level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// SplitList splits a comma-separated flag value, dropping blanks.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// IsTerminal reports whether w is a character device (a terminal), where
// progress bars are drawn; logs and pipes stay clean.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ClientTLS returns the gRPC dial options of a client that presents the
// certificate in certFile/keyFile and trusts the CA in caFile (the files
// cmd/blockfs-certs writes), or none when all three are empty.
func ClientTLS(caFile, certFile, keyFile string) ([]grpc.DialOption, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	_, client, err := security.TLSFromFiles(caFile, certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(client))}, nil
}
