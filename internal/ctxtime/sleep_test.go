package ctxtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleepReturnsNilAfterD(t *testing.T) {
	start := time.Now()
	if err := Sleep(context.Background(), 5*time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}
	if el := time.Since(start); el < 5*time.Millisecond {
		t.Fatalf("returned after %v, before d", el)
	}
}

func TestSleepReturnsCtxErrWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep = %v, want context.Canceled", err)
	}
}

func TestSleepOrWakeEndsWhenWakeCloses(t *testing.T) {
	wake := make(chan struct{})
	close(wake)
	if err := SleepOrWake(context.Background(), time.Hour, wake); err != nil {
		t.Fatalf("SleepOrWake = %v, want nil", err)
	}
}
