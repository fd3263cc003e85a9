package etcdstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/internal/testkit/etcdtest"
	"github.com/nodeid/nodeid/lease"
)

// TestUserPasswordAuth: with etcd's authentication on, a store with the
// right user and password works under the prefix its role may write; a
// wrong password is refused at the start; a key outside the role's range is
// refused definitely (not an unknown outcome).
func TestUserPasswordAuth(t *testing.T) {
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	steps := []func() error{
		func() error { _, err := admin.RoleAdd(ctx, "root"); return err },
		func() error { _, err := admin.UserAdd(ctx, "root", "root-secret"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.RoleAdd(ctx, "nodeid"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(ctx, "nodeid", "nodeid/", clientv3.GetPrefixRangeEnd("nodeid/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := admin.UserAdd(ctx, "nodeid", "nodeid-secret"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "nodeid", "nodeid"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("auth set-up step %d: %v", i, err)
		}
	}

	cfg := etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: "nodeid/", Username: "nodeid", Password: "nodeid-secret"}
	st, err := etcdstore.New(cfg)
	if err != nil {
		t.Fatalf("New with the right password: %v", err)
	}
	defer st.Close()
	if err := st.Check(ctx); err != nil {
		t.Fatalf("Check with the right password: %v", err)
	}
	m, err := lease.CreateLive(ctx, st, "7.json", []byte("held"), 2*time.Second)
	if err != nil {
		t.Fatalf("CreateLive under the role's prefix: %v", err)
	}
	if _, gm, err := st.Get(ctx, "7.json"); err != nil || gm.ETag != m.ETag || gm.Liveness != lease.LivenessLive {
		t.Fatalf("Get: %+v %v; want live with ETag %q", gm, err, m.ETag)
	}

	outside := st.WithPrefix("other/")
	_, err = outside.Create(ctx, "1.json", []byte("x"))
	if err == nil || errors.Is(err, lease.ErrUnknownOutcome) || errors.Is(err, lease.ErrPreconditionFailed) || !errors.Is(err, lease.ErrMisconfigured) {
		t.Fatalf("Create outside the role's range: %v, want a definite refusal matching lease.ErrMisconfigured", err)
	}

	bad := cfg
	bad.Password = "wrong"
	badSt, err := etcdstore.New(bad)
	if err == nil { // the client may authenticate at its first request
		err = badSt.Check(ctx)
		_ = badSt.Close()
	}
	if err == nil || !errors.Is(err, lease.ErrMisconfigured) {
		t.Fatalf("a wrong password: %v, want an error matching lease.ErrMisconfigured (a start fails at once)", err)
	}
}
