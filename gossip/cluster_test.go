package gossip

import (
	"strings"
	"sync/atomic"
	"testing"
)

// TestClusterLabelSeparatesPools: members of two clusters with labels cannot
// join each other; each keeps its own claims and raises no conflict.
func TestClusterLabelSeparatesPools(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("0123456789abcdef")} {
		var conflicts atomic.Int32
		a := testConfig("a")
		a.Cluster, a.SecretKey = "s3://bucket-a/ids", key
		a.OnConflict = func(int, int64) { conflicts.Add(1) }
		b := testConfig("b")
		b.Cluster, b.SecretKey = "s3://bucket-b/ids", key
		na, nb := start(t, a), start(t, b)
		if err := na.SetClaim(1, 1); err != nil {
			t.Fatal(err)
		}
		if err := nb.SetClaim(1, 3); err != nil {
			t.Fatal(err)
		}
		if _, err := nb.Join([]string{na.Addr()}); err == nil {
			t.Errorf("key %v: b joined a across clusters", key != nil)
		}
		if _, err := na.Join([]string{nb.Addr()}); err == nil {
			t.Errorf("key %v: a joined b across clusters", key != nil)
		}
		if len(na.Members()) != 1 || len(nb.Members()) != 1 {
			t.Errorf("members: a %v, b %v", na.Members(), nb.Members())
		}
		if got := na.KnownNodes(); !mapsEqual(got, map[int]int64{1: 1}) {
			t.Errorf("a KnownNodes = %v", got)
		}
		if conflicts.Load() != 0 {
			t.Errorf("a saw %d conflicts", conflicts.Load())
		}
		na.Close()
		nb.Close()
	}
}

// TestForeignMembersIgnored: a member that gets through without a label but
// names another cluster in its metadata is reported by Foreign and obeyed in
// nothing: no conflict, not in Members or KnownNodes, not counted by gates.
func TestForeignMembersIgnored(t *testing.T) {
	for _, order := range []string{"a joins b", "b joins a"} {
		t.Run(strings.ReplaceAll(order, " ", "_"), func(t *testing.T) {
			var ca, cb atomic.Int32
			a := testConfig("a") // no Cluster: no label
			a.OnConflict = func(int, int64) { ca.Add(1) }
			b := testConfig("b")
			b.Cluster, b.NoLabel = "s3://bucket-b/ids", true
			b.OnConflict = func(int, int64) { cb.Add(1) }
			na, nb := start(t, a), start(t, b)
			if err := na.SetClaim(1, 1); err != nil {
				t.Fatal(err)
			}
			if err := nb.SetClaim(1, 3); err != nil {
				t.Fatal(err)
			}
			from, to := na, nb
			if order == "b joins a" {
				from, to = nb, na
			}
			if _, err := from.Join([]string{to.Addr()}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "each sees the other as foreign", func() bool {
				fa, fb := na.Foreign(), nb.Foreign()
				return len(fa) == 1 && fa[0].Name == "b" && fa[0].Cluster == "s3://bucket-b/ids" &&
					len(fb) == 1 && fb[0].Name == "a" && fb[0].Cluster == ""
			})
			// A new version from b after it is known as foreign.
			if err := nb.SetClaim(1, 5); err != nil {
				t.Fatal(err)
			}
			if err := na.SetClaim(1, 2); err != nil {
				t.Fatal(err)
			}
			// Gates count no foreign member: with none of its own cluster, a
			// gate for all peers passes at once.
			if err := na.WaitSeen(t.Context(), 1, 2, 0); err != nil {
				t.Errorf("a WaitSeen: %v", err)
			}
			if len(na.Members()) != 1 || len(nb.Members()) != 1 {
				t.Errorf("members: a %v, b %v", na.Members(), nb.Members())
			}
			if got := na.KnownNodes(); !mapsEqual(got, map[int]int64{1: 2}) {
				t.Errorf("a KnownNodes = %v", got)
			}
			if got := nb.KnownNodes(); !mapsEqual(got, map[int]int64{1: 5}) {
				t.Errorf("b KnownNodes = %v", got)
			}
			if ca.Load() != 0 || cb.Load() != 0 {
				t.Errorf("conflicts: a %d, b %d", ca.Load(), cb.Load())
			}
		})
	}
}

func TestClusterLabelHashed(t *testing.T) {
	c := Config{Cluster: strings.Repeat("x", 300)}
	if l := c.label(); len(l) > MaxLabelLen || !strings.HasPrefix(l, "sha256:") {
		t.Errorf("label = %q", l)
	}
	c.Cluster = "s3://b/p"
	if l := c.label(); l != "s3://b/p" {
		t.Errorf("label = %q", l)
	}
}
