package election

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nodeid/nodeid/lease"
)

// ErrNoLeader means the election has no live leader: never held, resigned, or
// its leader's lease has expired.
var ErrNoLeader = errors.New("election: no leader")

// Info is an election's state as one read of its lease object showed it.
type Info struct {
	// Name is the election's name.
	Name string `json:"name"`
	// Leader is the task identity of the last holder; empty when none ever
	// held it or the last one resigned.
	Leader string `json:"leader"`
	// Value is the value Leader campaigned with (see Elections.Campaign);
	// empty when none, or when no one leads.
	Value string `json:"value,omitempty"`
	// Term is the last term handed out (0: never held).
	Term int64 `json:"term"`
	// Live reports whether Leader's lease is live on the store's clock.
	Live bool `json:"live"`
	// State is free, held or expired (see lease.State); "corrupt" when the
	// object does not decode.
	State string `json:"state"`
	// Age is the time since the last write, on the store's clock.
	Age time.Duration `json:"age"`
}

// Leader reads the election name once and reports its leader. Leader is empty
// and Live false while no one leads; an election never campaigned for gives
// Term 0 and no error.
func (e *Elections) Leader(ctx context.Context, name string) (Info, error) {
	st, err := e.storeFor(name)
	if err != nil {
		return Info{}, err
	}
	info := Info{Name: name, State: lease.StateFree.String()}
	body, m, err := st.Get(ctx, lease.RecordKey(0))
	if errors.Is(err, lease.ErrNotFound) {
		return info, nil
	}
	if err != nil {
		return Info{}, fmt.Errorf("election %s: %w", name, err)
	}
	return judge(name, body, m, e.cfg.ClockMargin)
}

// judge decodes an election's lease object from one response.
func judge(name string, body []byte, m lease.Meta, margin time.Duration) (Info, error) {
	info := Info{Name: name}
	info.Age, _ = lease.StoreAge(m.LastModified, m.Date)
	r, err := lease.DecodeRecord(body, 0)
	if err != nil {
		info.State = "corrupt"
		return info, fmt.Errorf("election %s: %w", name, err)
	}
	st := lease.StateOf(&r, m, margin)
	info.Leader, info.Value, info.Term, info.State = r.Holder, r.Value, r.Version, st.String()
	info.Live = st == lease.StateHeld
	return info, nil
}

// Names lists the elections under the store's prefix, sorted.
func (e *Elections) Names(ctx context.Context) ([]string, error) {
	l, err := e.store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("election: list: %w", err)
	}
	var names []string
	for _, o := range l.Objects {
		rest, ok := strings.CutPrefix(o.Key, Dir)
		if !ok {
			continue
		}
		name, key, ok := strings.Cut(rest, "/")
		if ok && key == lease.RecordKey(0) && CheckName(name) == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// All reads every election under the prefix (see Names and Leader). An
// election whose object is corrupt is reported with State "corrupt" and its
// error joined into the returned error.
func (e *Elections) All(ctx context.Context) ([]Info, error) {
	names, err := e.Names(ctx)
	if err != nil {
		return nil, err
	}
	var infos []Info
	var errs []error
	for _, n := range names {
		info, err := e.Leader(ctx, n)
		if err != nil {
			errs = append(errs, err)
			if info.Name == "" {
				continue
			}
		}
		infos = append(infos, info)
	}
	return infos, errors.Join(errs...)
}

// Observe reports the election name as Leader reads it: first at once, then
// each time its leader, value, term, liveness or state changes, reading it
// every interval (one GET) until ctx ends, when the channel is closed. A read
// that fails is skipped, and the next one tries again; a slow receiver gets
// the newest state, never a stale backlog. As etcd's Election.Observe, but
// polled: S3 has no watch.
func (e *Elections) Observe(ctx context.Context, name string, every time.Duration) (<-chan Info, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if every <= 0 {
		return nil, fmt.Errorf("election: observe %s: interval %v must be positive", name, every)
	}
	ch := make(chan Info, 1)
	go func() {
		defer close(ch)
		var last Info
		for first := true; ; first = false {
			info, err := e.Leader(ctx, name)
			if err == nil && (first || changed(last, info)) {
				last = info
				select { // replace an unread older state with this one
				case <-ch:
				default:
				}
				ch <- info
			}
			if e.cfg.Clock.Sleep(ctx, every) != nil {
				return
			}
		}
	}()
	return ch, nil
}

// changed reports whether b says something a did not (its age aside).
func changed(a, b Info) bool {
	return a.Leader != b.Leader || a.Value != b.Value || a.Term != b.Term || a.Live != b.Live || a.State != b.State
}
