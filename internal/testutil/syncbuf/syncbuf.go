// Package syncbuf is a bytes.Buffer that a server's goroutines may write
// while a test reads it: for tests that capture what a server logs.
package syncbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is safe for concurrent Write and String.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines returns what was written so far as lines, without the final
// newline; none for nothing.
func (s *Buffer) Lines() []string {
	t := strings.TrimSuffix(s.String(), "\n")
	if t == "" {
		return nil
	}
	return strings.Split(t, "\n")
}
