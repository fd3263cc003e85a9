package minio_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/s3store"
)

// provedReads counts the reads that proved a claim's ETag.
type provedReads struct {
	nodeid.NopObserver
	n atomic.Int64
}

func (o *provedReads) ReadProved(int, time.Duration) { o.n.Add(1) }

// TestReadModeClaim holds a read-mode claim on each real server for two
// windows with no backstop write due: the reads alone keep it valid. On
// versitygw, whose 304s carry no ETag, the probe passes with plain reads
// and the provider switches to plain GETs at its first unproven answer (a
// quarter poll later), so the claim never falls.
func TestReadModeClaim(t *testing.T) {
	for _, srv := range []server{minio, versitygw} {
		t.Run(srv.name, func(t *testing.T) {
			ns := srv.open(t)
			ctx := context.Background()
			st, err := s3store.New(ctx, srv.config(ns.bucket, ns.root+"readmode/"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := lease.ProbeReads(ctx, st, st)
			if err != nil || r.PlainReads != srv.notModifiedWithoutETag {
				t.Fatalf("ProbeReads = %+v, %v", r, err)
			}
			obs := &provedReads{}
			cfg := nodeid.DefaultLocalConfig()
			cfg.TaskID, cfg.ClusterSize, cfg.Observer = "reader", 1, obs
			cfg.KeepAlive, cfg.Window, cfg.Backstop = nodeid.KeepAliveRead, 6*time.Second, time.Minute
			cfg.LeaseDuration, cfg.RenewInterval, cfg.RenewDeadline, cfg.SafetyMargin, cfg.StoreTimeout = 0, 0, 0, 0, 0
			cfg.MaxLeaseDuration = time.Minute
			p, err := nodeid.New(st, cfg)
			if err != nil {
				t.Fatal(err)
			}
			c, err := p.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			end := time.Now().Add(2 * cfg.Window)
			for time.Now().Before(end) {
				if !c.Valid() {
					t.Fatalf("the claim fell %v into its reads (%d proved)", time.Until(end), obs.n.Load())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if n := obs.n.Load(); n < 4 {
				t.Fatalf("%d reads proved the claim in 2 windows", n)
			}
		})
	}
}
