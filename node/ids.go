package node

import (
	"fmt"

	"github.com/nodeid/nodeid/snowflake"
)

// Next returns a new Snowflake ID, unique across the cluster: issued under the
// held node ID, above its floor, within its reservation, and only while the
// lease is valid. Before Start has taken a node ID, and once the node fences,
// it fails (errors wrap ErrAcquiring, snowflake.ErrFenced, ...).
func (n *Node) Next() (snowflake.ID, error) {
	gen := n.gen.Load()
	if gen == nil {
		return 0, n.notServing()
	}
	id, err := gen.Next()
	n.noteIssue(err)
	if err != nil {
		return 0, err
	}
	n.countIssued(1)
	return id, nil
}

// NextN returns up to k consecutive IDs (fewer when the current millisecond
// runs out; at least one on success), as Next does one.
func (n *Node) NextN(k int) (snowflake.Range, error) {
	r, err := n.nextN(k)
	if err != nil {
		return r, err
	}
	n.countIssued(r.N)
	return r, nil
}

// nextN is NextN without counting the IDs as handed out.
func (n *Node) nextN(k int) (snowflake.Range, error) {
	gen := n.gen.Load()
	if gen == nil {
		return snowflake.Range{}, n.notServing()
	}
	r, err := gen.NextN(k)
	n.noteIssue(err)
	return r, err
}

// countIssued counts k IDs handed out.
func (n *Node) countIssued(k int) {
	n.issued.Add(int64(k))
	n.metrics.idsIssued.Add(float64(k))
}

// notServing returns why the node issues no IDs before it has a generator.
func (n *Node) notServing() error {
	if _, err := n.state(); err != nil {
		return err
	}
	return fmt.Errorf("node: no generator: %w", ErrAcquiring)
}
