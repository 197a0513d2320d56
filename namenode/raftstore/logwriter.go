package raftstore

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// LogWriter returns a writer for raft's (and its transport's and snapshot
// store's) log output that logs each line to log.
func LogWriter(log *slog.Logger) io.Writer { return &slogWriter{log: log} }

// slogWriter adapts raft's line-oriented log output to slog. hashicorp/raft
// writes "[LEVEL] component: message" lines; the level is kept.
type slogWriter struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *slogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *slogWriter) emit(line string) {
	level := slog.LevelInfo
	switch {
	case strings.Contains(line, "[ERROR]"):
		level = slog.LevelError
	case strings.Contains(line, "[WARN]"):
		level = slog.LevelWarn
	case strings.Contains(line, "[DEBUG]"), strings.Contains(line, "[TRACE]"):
		level = slog.LevelDebug
	}
	w.log.Log(nil, level, strings.TrimSpace(line), "component", "raft")
}
