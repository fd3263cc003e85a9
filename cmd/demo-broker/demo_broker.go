package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodeid/nodeid/lease/storetest"
	"github.com/nodeid/nodeid/node"
	"github.com/nodeid/nodeid/nodeid"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
	"github.com/nodeid/nodeid/snowflake"
)

// The states of a demo broker, as the table shows them: those of a node
// (node.StateAcquiring, StateHeld, StateLost, StateReleased) and these.
const (
	stateKilled   = "killed"   // died abruptly (kill -9): no release
	stateStopping = "stopping" // graceful stop: releasing its lease
	stateFailed   = "failed"   // it never got a node ID
)

// demoBroker is one broker of the demo, in process: a node.Node with its own
// S3 client and task identity, and a goroutine that issues batches of IDs
// until it is stopped or killed.
type demoBroker struct {
	name  string
	skew  time.Duration         // its wall clock is this far behind
	store *storetest.FaultStore // killed by kill
	node  *node.Node
	tl    timeline

	cancel   context.CancelFunc // stops the issuing goroutine
	acquired chan struct{}      // closed once it holds a node ID
	firstID  chan struct{}      // closed once it issued its first batch
	done     chan struct{}      // closed when its goroutine has ended
	issued   atomic.Int64       // IDs issued so far
	first    snowflake.ID       // its first ID: set before firstID is closed

	mu       sync.Mutex // guards the fields below
	state    string
	err      error
	heldAt   time.Time // when it got its node ID
	issueErr int       // NextN errors other than fenced

	// stream is written only by the broker's goroutine; read it after done.
	stream idStream
}

// newDemoBroker builds a broker with its own S3 client on srv.
func newDemoBroker(name string, srv *s3fake.Server, prefix string, clusterSize int, skew time.Duration, tl timeline) (*demoBroker, error) {
	st, err := newDemoStore(srv, prefix, tl.storeTimeout)
	if err != nil {
		return nil, err
	}
	ks := storetest.NewFaultStore(st)
	cfg := node.DefaultLocalConfig()
	pc := &cfg.Provider
	pc.TaskID = name
	pc.ClusterSize = clusterSize
	pc.LeaseDuration, pc.RenewInterval, pc.RenewDeadline = tl.lease, tl.renew, tl.renewDeadline
	pc.SafetyMargin, pc.StoreTimeout = tl.safety, tl.storeTimeout
	pc.AcquireBackoff, pc.AcquireTimeout = tl.acquireBackoff, tl.acquireTimeout
	pc.Clock = nodeid.SystemClock(-skew) // the generator reads it too
	cfg.Metrics = prometheus.NewRegistry()
	cfg.Elect = demoElection
	n, err := node.New(ks, cfg)
	if err != nil {
		return nil, err
	}
	return &demoBroker{
		name: name, skew: skew, store: ks, node: n, tl: tl, state: node.StateAcquiring,
		acquired: make(chan struct{}), firstID: make(chan struct{}), done: make(chan struct{}),
		stream: idStream{broker: name, node: -1},
	}, nil
}

// newDemoStore returns an s3store.Store with a client of its own on srv. The
// client is built by hand, not from the AWS configuration chain: the demo must
// run whatever AWS_PROFILE or ~/.aws says on this machine.
func newDemoStore(srv *s3fake.Server, prefix string, timeout time.Duration) (*s3store.Store, error) {
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL()),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s3fake.AccessKeyID, s3fake.SecretAccessKey, ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts, o.MaxBackoff = 3, 100*time.Millisecond
		}),
		DisableLogOutputChecksumValidationSkipped: true,
	})
	return s3store.NewFromClient(client, srv.Bucket(), prefix, s3store.WithRequestTimeout(2*timeout))
}

// start runs the broker in a goroutine: acquire a node ID, then issue IDs.
func (b *demoBroker) start(ctx context.Context) {
	ctx, b.cancel = context.WithCancel(ctx)
	go b.run(ctx)
}

func (b *demoBroker) run(ctx context.Context) {
	defer close(b.done)
	if err := b.node.Start(ctx); err != nil {
		b.setState(stateFailed, err)
		return
	}
	b.stream.node, b.stream.version = int64(b.node.NodeID()), b.node.Version()
	b.mu.Lock()
	if b.state == node.StateAcquiring {
		b.state, b.heldAt = node.StateHeld, time.Now()
	}
	b.mu.Unlock()
	close(b.acquired)
	b.issue(ctx)
}

// issue calls NextN every pace until ctx ends or the node is fenced (stopped
// by kill, or the claim ended). The pace keeps the demo frugal: a few
// hundred thousand IDs per second per broker, not millions.
func (b *demoBroker) issue(ctx context.Context) {
	tick := time.NewTicker(b.tl.pace)
	defer tick.Stop()
	for {
		r, err := b.node.NextN(b.tl.batch)
		switch {
		case err == nil:
			b.stream.add(r)
			if b.issued.Add(int64(r.N)) == int64(r.N) {
				b.first = r.First
				close(b.firstID)
			}
		case errors.Is(err, snowflake.ErrFenced):
			b.mu.Lock()
			if b.state == node.StateHeld { // neither killed nor stopping: the claim ended
				b.state, b.err = node.StateLost, b.node.Claim().Err()
			}
			b.mu.Unlock()
			return
		default:
			b.mu.Lock()
			b.issueErr++
			b.err = err
			b.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// kill makes the broker die as with kill -9: from now on none of its requests
// reach S3 (its renewals fail, nothing is released), and it stops issuing at
// once. Its lease stays in the bucket until it expires on the store's clock.
func (b *demoBroker) kill() {
	b.store.Kill(errKilled)
	b.setState(stateKilled, nil)
	b.cancel()
	// Close fences at once; its release cannot reach S3 and gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_ = b.node.Close(ctx)
	cancel()
	<-b.done
}

// stop stops the broker gracefully: it stops issuing, then releases its lease
// (node.Close), so that the ID is free at once.
func (b *demoBroker) stop(ctx context.Context) error {
	b.setState(stateStopping, nil)
	b.cancel()
	err := b.node.Close(ctx) // fences first: a NextN waiting on the clock returns at once
	<-b.done
	b.setState(node.StateReleased, err)
	return err
}

// shutdown ends the broker at the end of the demo: a live one is stopped
// gracefully; a killed or released one is already closed.
func (b *demoBroker) shutdown(ctx context.Context) error {
	switch b.getState() {
	case stateKilled, node.StateReleased:
		return nil
	case node.StateHeld:
		return b.stop(ctx)
	default: // acquiring, failed or lost: nothing to release
		b.cancel()
		err := b.node.Close(ctx)
		<-b.done
		if errors.Is(err, nodeid.ErrLeaseLost) {
			return nil // reported as lost already
		}
		return err
	}
}

func (b *demoBroker) setState(s string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.err = s, err
}

func (b *demoBroker) getState() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// brokerView is a snapshot of a broker for the table.
type brokerView struct {
	name, state string
	node        int
	version     int64
	issued      int64
	skew        time.Duration
	err         error
	lastWrite   time.Duration // since its last successful lease write (its own clock)
	expired     bool          // its claim took over an expired lease, not a free one
}

func (b *demoBroker) view() brokerView {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := brokerView{name: b.name, state: b.state, node: -1, issued: b.issued.Load(), skew: b.skew, err: b.err}
	if c := b.node.Claim(); c != nil {
		st := c.Status()
		v.node, v.version, v.lastWrite = st.NodeID, st.Version, st.SinceWrite
		v.expired = c.TookOverExpired()
	}
	return v
}

// errKilled is what a killed broker's store answers: its requests never leave
// the (dead) process.
var errKilled = errors.New("demo: the broker was killed: its requests never reach S3")
