package etcdtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/tcpgate"
)

// Cluster is a cluster of etcd members on 127.0.0.1, each on its own free
// ports and data folder. Clients reach each member through a tcpgate.Gate in front
// of its client port (Endpoints), so that a member can be partitioned from
// its clients (Partition) while it stays in the cluster; the members talk
// to each other directly on their peer ports, which no fault here cuts.
type Cluster struct {
	// Members are the members, in the order of Endpoints.
	Members []*Server
	gates   []*tcpgate.Gate
}

// StartCluster starts a cluster of n members for t, or skips t as Start
// does. It is stopped when t ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no etcd binary (CI=true): run test/etcd/install.sh, or set NODEID_ETCD_BIN")
		}
		t.Skip("no etcd binary: run test/etcd/install.sh, or set NODEID_ETCD_BIN")
	}
	c, err := LaunchCluster(bin, t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// LaunchCluster starts the etcd binary bin as a new cluster of n members,
// their data and logs under dir/m0, dir/m1, ..., and waits until every
// member is healthy. Stop it when done.
func LaunchCluster(bin, dir string, n int) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("etcdtest: a cluster of %d members", n)
	}
	c := &Cluster{}
	var peers []string
	for i := range n {
		mdir := filepath.Join(dir, fmt.Sprintf("m%d", i))
		if err := os.MkdirAll(mdir, 0o755); err != nil {
			return nil, err
		}
		s, err := newServer(bin, mdir, fmt.Sprintf("m%d", i), nil)
		if err != nil {
			return nil, err
		}
		g, err := tcpgate.New(s.Endpoint)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Members, c.gates = append(c.Members, s), append(c.gates, g)
		peers = append(peers, s.name+"="+s.peerURL)
	}
	for _, s := range c.Members {
		s.initialCluster = strings.Join(peers, ",")
	}
	if err := c.Start(c.all()...); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) all() []int {
	idx := make([]int, len(c.Members))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// Endpoints returns the client endpoints (host:port), one a member: the
// addresses of the gates in front of the members.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.gates))
	for i, g := range c.gates {
		eps[i] = g.Addr()
	}
	return eps
}

// Start starts the stopped members of members (indexes into Members) at
// once, on their ports and data, and waits until each is healthy: a member
// is once the cluster has a leader, so members that restore the quorum
// together must be started together.
func (c *Cluster) Start(members ...int) error {
	for _, i := range members {
		if c.Members[i].Running() {
			continue
		}
		if err := c.Members[i].spawn(); err != nil {
			return err
		}
	}
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for k, i := range members {
		wg.Add(1)
		go func() { defer wg.Done(); errs[k] = c.Members[i].waitHealthy(60 * time.Second) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Kill stops the members with sig (syscall.SIGKILL: kill -9) and waits for
// them to exit; their data stays, for Start.
func (c *Cluster) Kill(sig syscall.Signal, members ...int) {
	for _, i := range members {
		c.Members[i].Stop(sig)
	}
}

// Partition cuts member i off from its clients: the bytes of its client
// connections are held both ways, the connections left open (a network
// partition, not a refusal). The member stays in the cluster.
func (c *Cluster) Partition(i int) { c.gates[i].Block() }

// Heal ends member i's partition: the held bytes flow again.
func (c *Cluster) Heal(i int) {
	_ = c.gates[i].Heal() // fails only to listen again, and a blocked gate still listens
}

// Leader returns the index of the member that is leader, asking each running
// member's /metrics (etcd_server_is_leader); -1 and an error when none is.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	for i, s := range c.Members {
		if !s.Running() {
			continue
		}
		if lead, err := s.isLeader(ctx); err == nil && lead {
			return i, nil
		}
	}
	return -1, errors.New("etcdtest: no member is leader")
}

// WaitLeader polls Leader every 10 ms until a member is leader or ctx ends.
func (c *Cluster) WaitLeader(ctx context.Context) (int, error) {
	for {
		if i, err := c.Leader(ctx); err == nil {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("etcdtest: no leader: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Stop kills every member and closes the gates. Data stays.
func (c *Cluster) Stop() {
	for _, s := range c.Members {
		s.Stop(syscall.SIGKILL)
	}
	for _, g := range c.gates {
		_ = g.Close()
	}
}

// Logs returns every member's log so far, each under its name.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, s := range c.Members {
		fmt.Fprintf(&b, "--- etcd %s\n%s\n", s.name, s.Log())
	}
	return b.String()
}

// Name returns the member's name.
func (s *Server) Name() string { return s.name }

// isLeader reads etcd_server_is_leader from the member's /metrics.
func (s *Server) isLeader(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.clientURL+"/metrics", nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "etcd_server_is_leader "); ok {
			return strings.TrimSpace(v) == "1", nil
		}
	}
	return false, fmt.Errorf("etcdtest: no etcd_server_is_leader in %s's metrics", s.name)
}
