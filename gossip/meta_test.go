package gossip

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestMetaCodec(t *testing.T) {
	if got := string(encodeMeta(nil, "")); got != `{"nodeId":-1}` {
		t.Errorf("encodeMeta(nil) = %s", got)
	}
	if got := string(encodeMeta(&claim{nodeID: 3, version: 7}, "")); got != `{"nodeId":3,"version":7}` {
		t.Errorf("encodeMeta(3, 7) = %s", got)
	}
	tests := []struct {
		in   string
		want claim
		ok   bool
	}{
		{`{"nodeId":3,"version":7}`, claim{3, 7}, true},
		{`{"nodeId":0,"version":0}`, claim{0, 0}, true},
		{`{"nodeId":3,"version":7,"future":true}`, claim{3, 7}, true},
		{`{"nodeId":-1}`, claim{}, false},
		{`{"nodeId":3}`, claim{}, false},
		{`{"version":7}`, claim{}, false},
		{`{"nodeId":3,"version":-2}`, claim{}, false},
		{`{"nodeId":4194303,"version":1}`, claim{MaxNodeID, 1}, true},
		{`{"nodeId":4194304,"version":1}`, claim{}, false}, // no layout has that many node bits
		{`{"nodeId":"3","version":7}`, claim{}, false},
		{``, claim{}, false},
		{`garbage`, claim{}, false},
	}
	for _, tt := range tests {
		got, ok := decodeMeta([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("decodeMeta(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestMemberlistLogGoesToSlogAtDebug(t *testing.T) {
	var buf bytes.Buffer
	w := slogWriter{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if _, err := w.Write([]byte("[ERR] memberlist: Failed to send ping\n")); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"level=DEBUG", `msg="Failed to send ping"`, "memberlistLevel=ERR"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	buf.Reset()
	w = slogWriter{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	_, _ = w.Write([]byte("[DEBUG] memberlist: hidden\n"))
	if buf.Len() != 0 {
		t.Errorf("debug line logged at Info: %q", buf.String())
	}
}
