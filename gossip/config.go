package gossip

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// MaxNameLen is the longest member name accepted, in bytes. Names travel in UDP
// packets of about 1400 bytes; an ECS task ARN is about 100.
const MaxNameLen = 512

// MaxLabelLen is the longest Cluster used as is, in bytes: memberlist's limit
// for a label. A longer one is hashed.
const MaxLabelLen = 255

// Config configures a Node. Start from DefaultConfig (LAN timings) or
// DefaultLocalConfig (loopback), set Name, and pass it to Start, which
// validates it.
type Config struct {
	// Name is this member's name, unique in the cluster: the task identity (ECS
	// task ARN, or host+pid+random). Required, 1..MaxNameLen bytes. Two live
	// members with one name confuse memberlist: the second cannot join.
	Name string

	// BindAddr is the IP address to listen on, for both UDP and TCP. Default
	// "0.0.0.0".
	BindAddr string

	// BindPort is the port to listen on, for both UDP and TCP; 0 picks a free
	// port (tests). Default 7946.
	BindPort int

	// AdvertiseAddr is the IP address other members use to reach this one.
	// Empty: the bind address, or a private IP of this host when bound to
	// 0.0.0.0 (the task's ENI address under awsvpc networking).
	AdvertiseAddr string

	// AdvertisePort is the port other members use to reach this one. 0: the
	// bound port.
	AdvertisePort int

	// Join lists members to join at Start ("host:port", or "host" for the
	// BindPort); a name that resolves to several addresses joins them all.
	// Empty: start a cluster of one. Failing to reach any is logged, not an
	// error: gossip is advisory. Whenever this member sees no other live
	// member (none answered at Start, or all have left or died since), it
	// joins Join again, resolving the names afresh at each try, paced by
	// RejoinMin and RejoinMax, until Close.
	Join []string

	// Seeds, when set, returns more addresses to join ("host:port"), such as
	// those the cluster's lease records publish: it is called at Start and at
	// each try of the rejoin loop, with a context that ends at Close. A seed
	// that no live member advertises is joined, alone or not, and the loop
	// keeps trying (paced as for Join) until three tries in a row find every
	// seed it returns live; it then calls Seeds again only once this member
	// is alone.
	// It must return within about TCPTimeout. Nil: Join only.
	Seeds func(ctx context.Context) []string

	// RejoinMin is the first pause before joining again, in the rejoin loop
	// (see Join and Seeds). Each pause is drawn uniformly from [d/2, d), d
	// starting at RejoinMin and doubling after each try that reached no
	// member, up to RejoinMax. Default 1 s.
	RejoinMin time.Duration

	// RejoinMax caps the pause of the rejoin loop: the longest a member
	// alone waits between two tries once its join targets have stayed
	// unreachable. Default 30 s.
	RejoinMax time.Duration

	// ReconnectInterval is how often the rejoin loop tries to join again a
	// member found dead (not one that left), alone or not: one such address,
	// picked at random, at each tick. Two halves of a network partition each
	// find the other dead and stop contacting it; once the partition heals,
	// this joins them into one pool again within about ReconnectInterval plus
	// a push/pull (a few probe intervals). Default 30 s (serf's
	// ReconnectInterval); DefaultLocalConfig: 2 s.
	ReconnectInterval time.Duration

	// ReconnectTimeout is how long the address of a member found dead is
	// kept for reconnect; after it, the member is taken for gone for good (a
	// crashed task does not come back at its address; a replacement joins
	// itself). Long enough to outlast a network partition worth healing
	// by itself, short enough that a pool's churn does not leave it joining
	// crashed tasks' addresses for hours. Default 10 min.
	ReconnectTimeout time.Duration

	// Transport, when set, carries memberlist's packets and streams in place
	// of its default network transport (memberlist's Config.Transport), for
	// tests that filter traffic (a partition). BindAddr and BindPort must
	// name the address it is bound to. Nil: memberlist's net transport.
	Transport memberlist.NodeAwareTransport

	// Cluster is the identity of the cluster this member belongs to: what
	// defines it, such as the lease store ("s3://bucket/prefix", with the
	// endpoint when not AWS's). It scopes gossip: it is memberlist's Label, so
	// packets and streams of members with another label are dropped (with
	// SecretKey, the label is authenticated too), and it rides in the node
	// metadata, so that a member that gets through anyway (one with no label,
	// which memberlist lets through) is recognised as another cluster's: it is
	// logged and reported by Foreign, and never obeyed (no conflict, not in
	// KnownNodes, not counted by gates). An identity above MaxLabelLen bytes
	// is replaced by "sha256:" and its hash in hex.
	//
	// Empty: no label. Such a member only hears members without a label, and
	// treats those with one as foreign, as they treat it: set Cluster on every
	// member of a cluster, or on none (upgrades: all members of a cluster
	// must change together, as for a key).
	Cluster string

	// NoLabel sends Cluster in the metadata only, not as memberlist's label:
	// this member then exchanges packets with unlabelled members (older
	// releases, members without a Cluster), sees them as foreign and is seen
	// as foreign by them. For a transition or a test of the foreign path;
	// leave it false otherwise.
	NoLabel bool

	// SecretKey, when set, encrypts and authenticates all gossip (AES-GCM,
	// memberlist's keyring): 16, 24 or 32 bytes for AES-128, -192 or -256. Every
	// member needs the same key; members without it cannot join. Empty: plain
	// text, for trusted networks only.
	SecretKey []byte

	// OnConflict, when set, is called when another member advertises this
	// member's node ID (set by SetClaim) with a higher version: another task
	// holds the ID. Pass the version to (*nodeid.Claim).ObserveVersion. Calls are
	// made one at a time from a goroutine of the Node, in order, at most once
	// per claim and version, never after Close returns. They should return
	// quickly (later conflicts wait) and must not call Close (which waits for
	// them).
	OnConflict func(nodeID int, version int64)

	// GossipInterval is how often metadata changes are gossiped to a few random
	// members. Shorter spreads a new version faster, at the cost of more
	// packets. Default 200 ms.
	GossipInterval time.Duration

	// ProbeInterval is how often a random member is probed for failure
	// detection. Shorter detects dead members sooner, at the cost of more
	// packets and more false suspicions under load. Default 1 s.
	ProbeInterval time.Duration

	// ProbeTimeout is how long to wait for a probe's ack before trying indirect
	// probes; about the network's 99th percentile round trip. Default 500 ms.
	ProbeTimeout time.Duration

	// SuspicionMult sets how long a member that failed its probes stays
	// suspect before it is declared dead: SuspicionMult probe intervals
	// (times log10 of the member count above 10 members). Lower declares a
	// crashed member dead sooner, and a stalled live one too, which then
	// rejoins. Above 2, with SuspicionMult members or more, memberlist waits
	// up to 6 times as long unless other members confirm the suspicion.
	// memberlist's SuspicionMult. Default 4.
	SuspicionMult int

	// PushPullInterval is how often the full state is synchronised with a
	// random member over TCP: it repairs what gossip missed. Default 30 s.
	PushPullInterval time.Duration

	// TCPTimeout bounds TCP exchanges (joins, push/pull). Default 10 s.
	TCPTimeout time.Duration

	// GossipToTheDeadTime is how long a member found dead still gets this
	// member's gossip (memberlist's GossipToTheDeadTime): a short partition
	// heals by it alone, before the reconnect (ReconnectInterval) is needed.
	// Default 30 s; DefaultLocalConfig: 15 s.
	GossipToTheDeadTime time.Duration

	// UpdateTimeout bounds how long SetClaim and ClearClaim wait for the new
	// metadata to be broadcast. Past it they return anyway: the metadata is
	// set and spreads with later gossip and push/pull. Default 2 s.
	UpdateTimeout time.Duration

	// LeaveTimeout bounds how long Close waits for the leave message to be
	// broadcast before shutting down (past it, Close logs it and shuts down
	// all the same). Default 2 s.
	LeaveTimeout time.Duration

	// QueryInterval is how often WaitSeen asks the members that have not yet
	// confirmed the version. Default 250 ms.
	QueryInterval time.Duration

	// Logger receives this package's events (joins, leaves, conflicts) and,
	// at Debug level, memberlist's own log. Nil: logging is discarded.
	Logger *slog.Logger
}

// DefaultConfig returns a Config with memberlist's LAN timings
// (memberlist.DefaultLANConfig): fit for a VPC. Set Name before Start.
func DefaultConfig() Config {
	ml := memberlist.DefaultLANConfig()
	return Config{
		BindAddr:         "0.0.0.0",
		BindPort:         ml.BindPort,
		GossipInterval:   ml.GossipInterval,
		ProbeInterval:    ml.ProbeInterval,
		ProbeTimeout:     ml.ProbeTimeout,
		SuspicionMult:    ml.SuspicionMult,
		PushPullInterval: ml.PushPullInterval,
		TCPTimeout:       ml.TCPTimeout,
		UpdateTimeout:    2 * time.Second,
		LeaveTimeout:     2 * time.Second,
		QueryInterval:    250 * time.Millisecond,
		RejoinMin:        time.Second,
		RejoinMax:        30 * time.Second,

		GossipToTheDeadTime: ml.GossipToTheDeadTime,
		ReconnectInterval:   30 * time.Second,
		ReconnectTimeout:    10 * time.Minute,
	}
}

// DefaultLocalConfig returns a Config for loopback use and tests: bound to
// 127.0.0.1 on a free port, with memberlist's local timings
// (memberlist.DefaultLocalConfig). Set Name before Start.
func DefaultLocalConfig() Config {
	ml := memberlist.DefaultLocalConfig()
	c := DefaultConfig()
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.GossipInterval = ml.GossipInterval
	c.ProbeInterval = ml.ProbeInterval
	c.ProbeTimeout = ml.ProbeTimeout
	c.SuspicionMult = ml.SuspicionMult
	c.PushPullInterval = ml.PushPullInterval
	c.TCPTimeout = ml.TCPTimeout
	c.GossipToTheDeadTime = ml.GossipToTheDeadTime
	c.UpdateTimeout = time.Second
	c.LeaveTimeout = time.Second
	c.QueryInterval = 50 * time.Millisecond
	c.RejoinMin = 200 * time.Millisecond
	c.RejoinMax = 5 * time.Second
	c.ReconnectInterval = 2 * time.Second
	return c
}

// Validate checks c and fills in the optional fields; Start calls it. The
// error wraps ErrInvalidConfig and names each field at fault.
func (c *Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Name != "", "Name is empty: set it to the task identity")
	check(len(c.Name) <= MaxNameLen, "Name is %d bytes, above %d", len(c.Name), MaxNameLen)
	if c.BindAddr == "" {
		c.BindAddr = "0.0.0.0"
	}
	check(net.ParseIP(c.BindAddr) != nil, "BindAddr %q is not an IP address", c.BindAddr)
	check(c.AdvertiseAddr == "" || net.ParseIP(c.AdvertiseAddr) != nil, "AdvertiseAddr %q is not an IP address", c.AdvertiseAddr)
	check(c.BindPort >= 0 && c.BindPort <= 65535, "BindPort %d outside 0..65535", c.BindPort)
	check(c.AdvertisePort >= 0 && c.AdvertisePort <= 65535, "AdvertisePort %d outside 0..65535", c.AdvertisePort)
	switch len(c.SecretKey) {
	case 0, 16, 24, 32:
	default:
		errs = append(errs, fmt.Errorf("SecretKey is %d bytes: want 16, 24 or 32", len(c.SecretKey)))
	}
	check(c.GossipInterval > 0, "GossipInterval %v must be positive", c.GossipInterval)
	check(c.ProbeInterval > 0, "ProbeInterval %v must be positive", c.ProbeInterval)
	check(c.ProbeTimeout > 0 && c.ProbeTimeout < c.ProbeInterval,
		"ProbeTimeout %v must be positive and below ProbeInterval %v", c.ProbeTimeout, c.ProbeInterval)
	check(c.SuspicionMult >= 1, "SuspicionMult %d must be at least 1", c.SuspicionMult)
	check(c.PushPullInterval > 0, "PushPullInterval %v must be positive", c.PushPullInterval)
	check(c.TCPTimeout > 0, "TCPTimeout %v must be positive", c.TCPTimeout)
	check(c.GossipToTheDeadTime >= 0, "GossipToTheDeadTime %v must not be negative", c.GossipToTheDeadTime)
	check(c.UpdateTimeout > 0, "UpdateTimeout %v must be positive", c.UpdateTimeout)
	check(c.LeaveTimeout > 0, "LeaveTimeout %v must be positive", c.LeaveTimeout)
	check(c.QueryInterval > 0, "QueryInterval %v must be positive", c.QueryInterval)
	check(c.RejoinMin > 0 && c.RejoinMin <= c.RejoinMax,
		"RejoinMin %v must be positive and at most RejoinMax %v", c.RejoinMin, c.RejoinMax)
	check(c.ReconnectInterval > 0, "ReconnectInterval %v must be positive", c.ReconnectInterval)
	check(c.ReconnectTimeout >= c.ReconnectInterval,
		"ReconnectTimeout %v must be at least ReconnectInterval %v", c.ReconnectTimeout, c.ReconnectInterval)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// memberlistConfig returns the memberlist configuration for a validated c,
// with n's delegates.
func (c *Config) memberlistConfig(n *Node) *memberlist.Config {
	mc := memberlist.DefaultLANConfig()
	mc.Name = c.Name
	mc.BindAddr, mc.BindPort = c.BindAddr, c.BindPort
	mc.AdvertiseAddr, mc.AdvertisePort = c.AdvertiseAddr, c.AdvertisePort
	if mc.AdvertisePort == 0 {
		// With BindPort 0 too, memberlist sets both to the port it bound.
		mc.AdvertisePort = c.BindPort
	}
	mc.GossipInterval = c.GossipInterval
	mc.ProbeInterval = c.ProbeInterval
	mc.ProbeTimeout = c.ProbeTimeout
	mc.SuspicionMult = c.SuspicionMult
	mc.PushPullInterval = c.PushPullInterval
	mc.TCPTimeout = c.TCPTimeout
	mc.GossipToTheDeadTime = c.GossipToTheDeadTime
	if !c.NoLabel {
		mc.Label = c.label()
	}
	if len(c.SecretKey) > 0 {
		mc.SecretKey = append([]byte(nil), c.SecretKey...)
	}
	if c.Transport != nil {
		mc.Transport = c.Transport
	}
	mc.Delegate = (*delegate)(n)
	mc.Events = (*events)(n)
	mc.Logger = log.New(io.Writer(slogWriter{c.Logger}), "", 0)
	return mc
}

// label returns the memberlist label for c.Cluster: itself, or "sha256:" and
// its hash in hex when longer than MaxLabelLen bytes.
func (c *Config) label() string {
	if len(c.Cluster) <= MaxLabelLen {
		return c.Cluster
	}
	sum := sha256.Sum256([]byte(c.Cluster))
	return "sha256:" + hex.EncodeToString(sum[:])
}
