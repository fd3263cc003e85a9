package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/s3store/s3fake"
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

// TestWrongBucketFailsTheStart: a bucket that does not exist ends the start
// at once with an error that names it and matches lease.ErrMisconfigured
// (not an inconclusive probe retried until the acquire timeout), and the
// service exits 1, not 3.
func TestWrongBucketFailsTheStart(t *testing.T) {
	srv, err := s3fake.Start(s3fake.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", s3fake.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3fake.SecretAccessKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	err = run(context.Background(), []string{"-bucket", "nodeid-typo", "-s3-endpoint", srv.URL(), "-http-addr", "127.0.0.1:0"},
		slog.New(slog.DiscardHandler), nil)
	if !errors.Is(err, lease.ErrMisconfigured) || errors.Is(err, lease.ErrProbeInconclusive) || !strings.Contains(err.Error(), `bucket "nodeid-typo" does not exist`) {
		t.Fatalf("run: %v, want the missing bucket named at once", err)
	}
	if code := exitCode(err); code != 1 {
		t.Errorf("exit code %d for a failed start, want 1", code)
	}
}
