package storetest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// CallLog is a [Sink] that writes the calls of a recorded store ([Record])
// as JSON lines, for another process to check ([ReadCallLog]): one line as a
// call starts ({"seq":N, ...}: a write with its outcome unknown) and one with
// the same seq as it ends. A write is in the log before it is sent, so a
// process killed with a write in flight leaves that write in the history,
// of unknown outcome, and a later read of its value resolves it. Each line
// is one Write: on a file, a process killed mid-line leaves a partial last
// line at most. Times are read from now. It is safe for concurrent use.
type CallLog struct {
	now func() time.Duration

	mu  sync.Mutex
	w   io.Writer
	seq uint64
	err error
}

// logLine is one line of a CallLog.
type logLine struct {
	Seq uint64 `json:"seq"`
	Call
}

// NewCallLog returns a CallLog that writes to w, with times read from now
// ([MonotonicClock]: the clock the checking process reads too).
func NewCallLog(w io.Writer, now func() time.Duration) *CallLog { return &CallLog{now: now, w: w} }

// Now implements [Sink].
func (l *CallLog) Now() time.Duration { return l.now() }

// Begin implements [Sink]: it writes c, and returns what writes its end.
func (l *CallLog) Begin(c Call) func(Call) {
	l.mu.Lock()
	l.seq++
	seq := l.seq
	l.mu.Unlock()
	l.write(logLine{Seq: seq, Call: c})
	return func(c Call) { l.write(logLine{Seq: seq, Call: c}) }
}

func (l *CallLog) write(line logLine) {
	b, err := json.Marshal(line)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		_, err = l.w.Write(append(b, '\n'))
	}
	if err != nil && l.err == nil {
		l.err = err
	}
}

// Err returns the first error writing the log met, or nil: a log that lost
// a line is a history with a hole.
func (l *CallLog) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// ReadCallLog reads the calls a [CallLog] wrote, in the order they began:
// each as it ended, or as it began if it never ended (a write of unknown
// outcome; a read that got no answer is left out). A last line cut short (the
// writer was killed mid-line) is ignored; any other line that does not parse
// is an error.
func ReadCallLog(r io.Reader) ([]Call, error) {
	br := bufio.NewReader(r)
	byseq := map[uint64]Call{}
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			var line logLine
			switch uerr := json.Unmarshal(b, &line); {
			case uerr != nil && errors.Is(err, io.EOF):
				return calls(byseq), nil // cut short
			case uerr != nil:
				return nil, fmt.Errorf("storetest: call log line %d: %w", n, uerr)
			}
			byseq[line.Seq] = line.Call
		}
		switch {
		case errors.Is(err, io.EOF):
			return calls(byseq), nil
		case err != nil:
			return nil, fmt.Errorf("storetest: read call log: %w", err)
		}
	}
}

// calls returns the calls of a read log in the order of their seq.
func calls(byseq map[uint64]Call) []Call {
	seqs := make([]uint64, 0, len(byseq))
	for s, c := range byseq {
		if c.Op == OpGet && c.Outcome == OutcomeUnknown {
			continue // a read that got no answer: it constrains nothing
		}
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	out := make([]Call, len(seqs))
	for i, s := range seqs {
		out[i] = byseq[s]
	}
	return out
}
