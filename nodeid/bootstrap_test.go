package nodeid

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/lease/storetest"
)

// A fleet starting at once on an empty bucket: every task gets its own ID and
// each lease object is created about once, not once per task.
func TestHerdOnEmptyBucket(t *testing.T) {
	e := newEnv(t)
	const tasks = 48
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		claims []*Claim
	)
	for i := range tasks {
		cfg := e.config(fmt.Sprintf("herd-%d", i))
		cfg.ClusterSize = tasks
		p := e.provider(cfg)
		wg.Go(func() {
			c, err := p.Acquire(context.Background())
			if err != nil {
				t.Errorf("Acquire: %v", err)
				return
			}
			mu.Lock()
			claims = append(claims, c)
			mu.Unlock()
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, c := range claims {
		if seen[c.NodeID()] {
			t.Fatalf("node %d handed out twice", c.NodeID())
		}
		seen[c.NodeID()] = true
		defer c.Close(context.Background())
	}
	creates := e.mem.Count(storetest.OpCreate)
	total := creates + e.mem.Count(storetest.OpGet) + e.mem.Count(storetest.OpList) + e.mem.Count(storetest.OpUpdate)
	if creates > 3*tasks || total > 10*tasks {
		t.Fatalf("%d tasks made %d creates and %d requests in all; want at most %d and %d", tasks, creates, total, 3*tasks, 10*tasks)
	}
	t.Logf("%d tasks: %d requests (%d creates), %.1f per task", tasks, total, creates, float64(total)/tasks)
}

func TestFillAfterTheBootstrapWindow(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 6
	c := e.acquire(e.provider(cfg))
	_ = c.Close(context.Background())
	cfg.TaskID = "b"
	v, err := e.provider(cfg).bootstrap(context.Background())
	if err != nil || v.manifest.Filled || len(v.objects) != 1 {
		t.Fatalf("within the window: err %v, filled %v, %d objects; want no fill", err, v.manifest.Filled, len(v.objects))
	}
	e.clk.Advance(cfg.BootstrapWindow)
	v, err = e.provider(cfg).bootstrap(context.Background())
	if err != nil || !v.manifest.Filled || len(v.objects) != 6 {
		t.Fatalf("after the window: err %v, filled %v, %d objects; want filled with 6", err, v.manifest.Filled, len(v.objects))
	}
	body, _, _ := e.mem.Get(context.Background(), lease.ManifestKey)
	if m, err := lease.DecodeManifest(body); err != nil || !m.Filled {
		t.Fatalf("stored manifest %+v, %v: want filled", m, err)
	}
	for id := range 6 {
		r, _ := e.record(id)
		if r.Holder != "" || (id != c.NodeID() && r.Version != 0) {
			t.Fatalf("record %d after fill: %+v", id, r)
		}
	}
	creates := e.mem.Count(storetest.OpCreate)
	if _, err := e.provider(cfg).bootstrap(context.Background()); err != nil || e.mem.Count(storetest.OpCreate) != creates {
		t.Fatalf("a bootstrap of a filled cluster created objects (err %v)", err)
	}
}

func TestFillSkipsMarkingWhenACreateDidNotLand(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 3
	_ = e.acquire(e.provider(cfg)).Close(context.Background())
	e.clk.Advance(time.Minute)
	e.store.Queue(storetest.OpCreate, storetest.Fault{Err: storetest.Unknown(storetest.OpCreate, "")})
	cfg.TaskID = "b"
	v, err := e.provider(cfg).bootstrap(context.Background())
	if err != nil || v.manifest.Filled {
		t.Fatalf("manifest marked filled although a create did not land (err %v)", err)
	}
	if v, err = e.provider(cfg).bootstrap(context.Background()); err != nil || !v.manifest.Filled {
		t.Fatalf("next bootstrap: err %v filled %v, want filled", err, v.manifest.Filled)
	}
}

func TestSpreadOrderIsAPermutation(t *testing.T) {
	e := newEnv(t)
	for _, task := range []string{"a", "task-7", "arn:aws:ecs:eu-west-1:123:task/c/0f1e"} {
		cfg := e.config(task)
		p := e.provider(cfg)
		for n := 1; n <= 300; n++ {
			seen := make([]bool, n)
			for _, id := range p.visitOrder(n) {
				if id < 0 || id >= n || seen[id] {
					t.Fatalf("task %q, n %d: order is not a permutation (%d)", task, n, id)
				}
				seen[id] = true
			}
		}
	}
}

func TestInitFillsAtOnceAndIsIdempotent(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("operator")
	cfg.ClusterSize = 5
	r, err := Init(context.Background(), e.store, cfg)
	if err != nil || !r.ManifestCreated || !r.Manifest.Filled || fmt.Sprint(r.Created) != "[0 1 2 3 4]" || len(r.Deleted) != 0 {
		t.Fatalf("Init = %+v, %v; want the manifest created, filled, objects 0..4 created", r, err)
	}
	r, err = Init(context.Background(), e.store, cfg)
	if err != nil || r.ManifestCreated || len(r.Created)+len(r.Deleted) != 0 || !r.Manifest.Filled {
		t.Fatalf("second Init = %+v, %v; want nothing created", r, err)
	}
	e.mem.Delete(lease.RecordKey(3))
	e.mem.Delete(lease.RecordKey(1))
	r, err = Init(context.Background(), e.store, cfg)
	if err != nil || len(r.Created) != 0 || fmt.Sprint(r.Deleted) != "[1 3]" || !r.Manifest.Filled {
		t.Fatalf("Init after a deletion = %+v, %v; want 1 and 3 reported deleted, nothing created", r, err)
	}
	if _, _, err := e.mem.Get(context.Background(), lease.RecordKey(3)); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("a deleted object was recreated (%v): no floor for it is safe whatever the clocks", err)
	}
}

// Tasks that start after the bootstrap window all fill: each stops at the first
// object another task created, instead of every task creating every object.
func TestFillStopsWhenAnotherTaskFills(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("a")
	cfg.ClusterSize = 64
	_ = e.acquire(e.provider(cfg)).Close(context.Background())
	e.clk.Advance(time.Minute)
	creates := e.mem.Count(storetest.OpCreate)
	e.store.Queue(storetest.OpCreate, storetest.Fault{Err: lease.ErrPreconditionFailed})
	cfg.TaskID = "b"
	v, err := e.provider(cfg).bootstrap(context.Background())
	if err != nil || v.manifest.Filled {
		t.Fatalf("bootstrap racing another filler: err %v, filled %v; want not filled", err, v.manifest.Filled)
	}
	if n := e.mem.Count(storetest.OpCreate) - creates; n > bootstrapParallelism {
		t.Fatalf("a filler that lost a create race went on with %d creates", n)
	}
	if v, err = e.provider(cfg).bootstrap(context.Background()); err != nil || !v.manifest.Filled {
		t.Fatalf("next bootstrap: err %v, filled %v; want filled", err, v.manifest.Filled)
	}
}

// errNoListBucket is S3's answer to a GET of a missing key when the caller
// may list the bucket only with an s3:prefix (deploy/iam-task-role-policy.json).
var errNoListBucket = fmt.Errorf("access denied (a missing key, without s3:ListBucket): %w", lease.ErrMisconfigured)

// TestManifestCreateOutcomeUnknown: when the answer to the first create of
// the manifest is lost, whether or not it landed, the first task still
// starts, without reading a manifest that may be missing: under the shipped
// task-role policy S3 answers that read 403. The create is sent again, and
// its refusal says that the manifest exists.
func TestManifestCreateOutcomeUnknown(t *testing.T) {
	for _, landed := range []bool{false, true} {
		t.Run(fmt.Sprintf("landed=%v", landed), func(t *testing.T) {
			e := newEnv(t)
			e.store.SetInjector(func(op storetest.Op, key string) storetest.Fault {
				if op == storetest.OpGet {
					if _, _, err := e.mem.Get(context.Background(), key); errors.Is(err, lease.ErrNotFound) {
						return storetest.Fault{Err: errNoListBucket}
					}
				}
				return storetest.Fault{}
			})
			e.store.Queue(storetest.OpCreate, storetest.Fault{Landed: landed,
				Err: &lease.UnknownOutcomeError{Op: "create", Key: lease.ManifestKey, Err: errors.New("500 InternalError"), ServerError: true}})
			a := e.acquire(e.provider(e.config("a")))
			b := e.acquire(e.provider(e.config("b")))
			if a.NodeID() == b.NodeID() {
				t.Fatalf("both hold node ID %d", a.NodeID())
			}
			if _, _, err := e.mem.Get(context.Background(), lease.ManifestKey); err != nil {
				t.Fatalf("no manifest: %v", err)
			}
		})
	}
}
