package serve

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// stallCounter counts the HTTP requests cut off by the progress timeout,
// by direction ("read": the request body stalled; "write": the peer
// stopped taking the response).
type stallCounter struct{ read, write prometheus.Counter }

func newStallCounter(reg *prometheus.Registry) *stallCounter {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "blockfs_http_stalled_total",
		Help: "HTTP requests whose body (dir=read) or response (dir=write) made no progress for --http-progress-timeout; the read or write failed and the handler returned.",
	}, []string{"dir"})
	if reg != nil {
		reg.MustRegister(v)
	}
	return &stallCounter{read: v.WithLabelValues("read"), write: v.WithLabelValues("write")}
}

// progress serves h under a progress deadline: the connection's read and
// write deadlines are set to now+idle when the request starts and pushed
// forward on every read of the body and every write of the response, so a
// transfer of any size runs as long as it moves, and one that stalls for
// idle fails its read or write (counted in stalls). idle <= 0 serves h
// unchanged.
func progress(h http.Handler, idle time.Duration, stalls *stallCounter) http.Handler {
	if idle <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		d := time.Now().Add(idle)
		// Errors mean the connection cannot take deadlines (a test
		// recorder); the request is then served without one.
		_ = rc.SetReadDeadline(d)
		_ = rc.SetWriteDeadline(d)
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &progressBody{ReadCloser: r.Body, rc: rc, idle: idle, stalled: stalls.read}
		}
		h.ServeHTTP(&progressWriter{ResponseWriter: w, rc: rc, idle: idle, stalled: stalls.write}, r)
	})
}

// isTimeout reports whether err is a passed deadline.
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// progressBody extends the read deadline before every read of the body.
type progressBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	idle    time.Duration
	stalled prometheus.Counter
	counted bool
}

func (b *progressBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.idle))
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.counted && isTimeout(err) {
		b.counted = true
		b.stalled.Inc()
	}
	return n, err
}

// progressWriter extends the write deadline before every write of the
// response. It unwraps for http.ResponseController and flushes as the
// writer it wraps does.
type progressWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	idle    time.Duration
	stalled prometheus.Counter
	counted bool
}

func (w *progressWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle))
	n, err := w.ResponseWriter.Write(p)
	if err != nil && !w.counted && isTimeout(err) {
		w.counted = true
		w.stalled.Inc()
	}
	return n, err
}

// Flush sends buffered data to the client, if the wrapped writer can.
func (w *progressWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle))
	_ = w.rc.Flush()
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
