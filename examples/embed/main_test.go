package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
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

// TestSilentEndpointFailsTheStart: an S3 endpoint that accepts connections
// and never answers ends the start when the store's check gets no answer
// within the store's default request timeout (5 s; the test's own 20 s
// context is only a guard), with an error that names the endpoint and the
// bucket, and the service exits 1.
func TestSilentEndpointFailsTheStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	})
	defer func() {
		_ = ln.Close()
		wg.Wait()
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	t.Setenv("AWS_ACCESS_KEY_ID", "key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	endpoint := "http://" + ln.Addr().String()
	err = run(ctx, []string{"-bucket", "lease-bucket", "-s3-endpoint", endpoint, "-http-addr", "127.0.0.1:0"}, slog.New(slog.DiscardHandler), nil)
	want := "store check: s3store: check: no answer from " + endpoint + ` (bucket "lease-bucket") within 5s`
	if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), want) {
		t.Fatalf("run: %v, want %q", err, want)
	}
	if code := exitCode(err); code != 1 {
		t.Errorf("exit code %d for a failed start, want 1", code)
	}
}

// TestBadFlagExits2: a bad flag is nodeid-broker's exit 2.
func TestBadFlagExits2(t *testing.T) {
	err := run(context.Background(), []string{"-bukket", "b"}, slog.New(slog.DiscardHandler), nil)
	if code := exitCode(err); code != 2 {
		t.Fatalf("exit code %d for %v, want 2", code, err)
	}
}
