package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServesOrders runs the service on an embedded S3 as its main would, asks
// it for an order (an ID), and stops it as SIGTERM would.
func TestServesOrders(t *testing.T) {
	ctx, sigterm := context.WithCancel(context.Background())
	defer sigterm()
	listening := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-embedded-s3", "-http-addr", "127.0.0.1:0"}, slog.New(slog.DiscardHandler), listening)
	}()
	addr := <-listening
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/order")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			if !strings.HasPrefix(string(body), "order ") {
				t.Fatalf("/order: %q", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/order still %d %q", resp.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond) // 503 until the node holds its ID
	}
	sigterm()
	if err := <-done; err != nil {
		t.Fatalf("run after SIGTERM: %v", err)
	}
}
