package gossip

import (
	"context"
	"log/slog"
	"strings"
)

// slogWriter routes memberlist's log lines ("[DEBUG] memberlist: ...") to a
// slog.Logger, all at Debug level: memberlist reports routine events of a
// healthy cluster (a peer that stopped answering, a retried probe) as [ERR].
// This package logs what an operator needs at Info and Warn itself.
type slogWriter struct{ log *slog.Logger }

// Write logs one line; it never fails.
func (w slogWriter) Write(p []byte) (int, error) {
	if !w.log.Enabled(context.Background(), slog.LevelDebug) {
		return len(p), nil
	}
	line := strings.TrimRight(string(p), "\n")
	level := ""
	if strings.HasPrefix(line, "[") {
		if i := strings.IndexByte(line, ']'); i > 0 {
			level, line = line[1:i], strings.TrimSpace(line[i+1:])
		}
	}
	line = strings.TrimPrefix(line, "memberlist: ")
	w.log.Debug(line, "source", "memberlist", "memberlistLevel", level)
	return len(p), nil
}
