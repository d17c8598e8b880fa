// Package controller keeps edgeplane's desired state in etcd and serves
// the northbound: plan, apply (every node of a change or none), rollback
// to an earlier revision, watch.
//
// Keys, under Prefix:
//
//	meta/revision        the current revision N (decimal); 0 or absent: empty
//	desired/<node>       model.NodeDesired: the node's config and the revision that set it
//	revisions/<N>        model.RevisionInfo of revision N (16 digits, zero-padded)
//	status/<node>        model.NodeStatus, written by the node's agent under a lease
//
// A change is one etcd transaction that compares meta/revision's
// ModRevision with the one the change was planned on, and then writes
// meta/revision, every changed desired/<node> and revisions/<N>: the nodes
// of a change are stored together or not at all, and two controllers (or
// two requests) cannot interleave. History is etcd's own MVCC: the state
// at revision N is the desired/ prefix read at the etcd revision of
// revisions/<N>'s write, so a rollback reads it back whole. The
// controller never compacts; an operator who compacts etcd gives up the
// rollbacks before the compaction (they answer 410).
package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"edgeplane/control/model"
)

// Prefix is the root of every key the controller and the agents use.
const Prefix = "/edgeplane/v1/"

const (
	keyRevision  = Prefix + "meta/revision"
	keyDesired   = Prefix + "desired/"
	keyRevisions = Prefix + "revisions/"
	keyStatus    = Prefix + "status/"
)

// DesiredKey is where node's desired configuration lives (agents watch it).
func DesiredKey(node string) string { return keyDesired + node }

// StatusKey is where node's agent reports.
func StatusKey(node string) string { return keyStatus + node }

func revisionKey(n int64) string { return fmt.Sprintf("%s%016d", keyRevisions, n) }

// MaxChanges bounds the changes a plan lists per node (its counts have
// them all): a plan of 64K new subscribers is a count, not a 64K-line
// answer.
const MaxChanges = 1000

// Errors a request can meet; the server maps them to status codes.
var (
	ErrConflict  = errors.New("conflict")   // 409: expectedRevision is not current
	ErrNotFound  = errors.New("not found")  // 404
	ErrCompacted = errors.New("compacted")  // 410: etcd no longer has that revision's state
	ErrBadChange = errors.New("bad change") // 400
)

// Store is the desired state in etcd.
type Store struct {
	cli *clientv3.Client
	now func() time.Time
}

// NewStore uses cli (the caller closes it).
func NewStore(cli *clientv3.Client) *Store { return &Store{cli: cli, now: time.Now} }

// snapshot is the state at one etcd revision.
type snapshot struct {
	rev     int64 // ours
	metaMod int64 // meta/revision's ModRevision (0: never written)
	etcdRev int64
	nodes   map[string]model.NodeDesired
}

func (s *Store) read(ctx context.Context, opts ...clientv3.OpOption) (*snapshot, error) {
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpGet(keyRevision, opts...),
		clientv3.OpGet(keyDesired, append([]clientv3.OpOption{clientv3.WithPrefix()}, opts...)...),
	).Commit()
	if err != nil {
		return nil, err
	}
	snap := &snapshot{etcdRev: resp.Header.Revision, nodes: map[string]model.NodeDesired{}}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
		snap.metaMod = kvs[0].ModRevision
		if snap.rev, err = strconv.ParseInt(string(kvs[0].Value), 10, 64); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", keyRevision, kvs[0].Value, err)
		}
	}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		var d model.NodeDesired
		if err := json.Unmarshal(kv.Value, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", kv.Key, err)
		}
		snap.nodes[strings.TrimPrefix(string(kv.Key), keyDesired)] = d
	}
	return snap, nil
}

// State is the desired state of every node.
func (s *Store) State(ctx context.Context) (model.DesiredState, error) {
	snap, err := s.read(ctx)
	if err != nil {
		return model.DesiredState{}, err
	}
	st := model.DesiredState{Revision: snap.rev, Nodes: map[string]model.NodeConfig{}}
	for n, d := range snap.nodes {
		st.Nodes[n] = d.Config
	}
	return st, nil
}

// Node is one node's desired configuration.
func (s *Store) Node(ctx context.Context, node string) (model.NodeDesired, error) {
	resp, err := s.cli.Get(ctx, DesiredKey(node))
	if err != nil {
		return model.NodeDesired{}, err
	}
	if len(resp.Kvs) == 0 {
		return model.NodeDesired{}, fmt.Errorf("%w: no node %q", ErrNotFound, node)
	}
	var d model.NodeDesired
	err = json.Unmarshal(resp.Kvs[0].Value, &d)
	return d, err
}

// Status is what node's agent last reported.
func (s *Store) Status(ctx context.Context, node string) (model.NodeStatus, error) {
	resp, err := s.cli.Get(ctx, StatusKey(node))
	if err != nil {
		return model.NodeStatus{}, err
	}
	if len(resp.Kvs) == 0 {
		return model.NodeStatus{}, fmt.Errorf("%w: no agent of node %q has reported (or its lease expired)", ErrNotFound, node)
	}
	var st model.NodeStatus
	err = json.Unmarshal(resp.Kvs[0].Value, &st)
	return st, err
}

// change is a change request checked against a snapshot.
type change struct {
	put    map[string]model.NodeConfig
	remove []string
	plan   model.Plan
}

// prepare validates req and plans it on snap; nothing is written.
func prepare(snap *snapshot, req model.ChangeRequest) (*change, error) {
	if req.ExpectedRevision != nil && *req.ExpectedRevision != snap.rev {
		return nil, fmt.Errorf("%w: expectedRevision %d, the current revision is %d", ErrConflict, *req.ExpectedRevision, snap.rev)
	}
	c := &change{put: map[string]model.NodeConfig{}, plan: model.Plan{BaseRevision: snap.rev, Nodes: []model.NodePlan{}}}
	names := make([]string, 0, len(req.Nodes)+len(req.Remove))
	for n, cfg := range req.Nodes {
		if !nodeName.MatchString(n) {
			return nil, bad(fmt.Errorf("nodes: %q is not a node name (%s)", n, model.Schema("NodeName").Description))
		}
		if err := cfg.Validate(); err != nil {
			var inv *model.Invalid
			if errors.As(err, &inv) {
				inv.Path = joinPath("nodes."+n, inv.Path)
			}
			return nil, bad(err)
		}
		c.put[n] = cfg
		names = append(names, n)
	}
	for _, n := range req.Remove {
		if _, both := req.Nodes[n]; both {
			return nil, bad(fmt.Errorf("node %q is both in nodes and in remove", n))
		}
		if _, ok := snap.nodes[n]; !ok {
			return nil, bad(fmt.Errorf("remove: no node %q", n))
		}
		c.remove = append(c.remove, n)
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var old, new *model.NodeConfig
		if d, ok := snap.nodes[n]; ok {
			old = &d.Config
		}
		if cfg, ok := c.put[n]; ok {
			new = &cfg
		}
		changes := model.Diff(old, new)
		if len(changes) == 0 {
			delete(c.put, n) // unchanged: not rewritten, its revision stays
			continue
		}
		np := model.NodePlan{Node: n, Counts: map[string]int{}}
		for _, ch := range changes {
			np.Counts[string(ch.Op)]++
		}
		if len(changes) > MaxChanges {
			changes, np.Truncated = changes[:MaxChanges], true
		}
		np.Changes = changes
		c.plan.Nodes = append(c.plan.Nodes, np)
	}
	return c, nil
}

// badChange is a refused change: its message is the reason alone, and it
// is ErrBadChange (400) to errors.Is.
type badChange struct{ error }

func (badChange) Is(target error) bool { return target == ErrBadChange }

func bad(err error) error { return badChange{err} }

var nodeName = regexp.MustCompile(model.Schema("NodeName").Pattern)

func joinPath(a, b string) string {
	if b == "" {
		return a
	}
	return a + "." + b
}

// Plan says what req would change; nothing is written.
func (s *Store) Plan(ctx context.Context, req model.ChangeRequest) (model.Plan, error) {
	snap, err := s.read(ctx)
	if err != nil {
		return model.Plan{}, err
	}
	c, err := prepare(snap, req)
	if err != nil {
		return model.Plan{}, err
	}
	return c.plan, nil
}

// Apply stores req as one new revision: every node of it or none. A
// change that changes nothing answers the current revision and writes
// nothing. Another writer between the read and the write makes the
// transaction fail; without expectedRevision the change is planned again
// on the new state (a few times), with it the answer is ErrConflict.
func (s *Store) Apply(ctx context.Context, req model.ChangeRequest) (model.Applied, error) {
	return s.apply(ctx, req, nil)
}

func (s *Store) apply(ctx context.Context, req model.ChangeRequest, rollbackOf *int64) (model.Applied, error) {
	for attempt := 0; ; attempt++ {
		snap, err := s.read(ctx)
		if err != nil {
			return model.Applied{}, err
		}
		c, err := prepare(snap, req)
		if err != nil {
			return model.Applied{}, err
		}
		if len(c.plan.Nodes) == 0 {
			return model.Applied{Revision: snap.rev, Plan: c.plan}, nil
		}
		next := snap.rev + 1
		info := model.RevisionInfo{Revision: next, Time: s.now().UTC(), Comment: req.Comment, RollbackOf: rollbackOf, Nodes: []string{}}
		ops := []clientv3.Op{clientv3.OpPut(keyRevision, strconv.FormatInt(next, 10))}
		for _, np := range c.plan.Nodes {
			info.Nodes = append(info.Nodes, np.Node)
			cfg, put := c.put[np.Node]
			if !put {
				ops = append(ops, clientv3.OpDelete(DesiredKey(np.Node)))
				continue
			}
			b, err := json.Marshal(model.NodeDesired{Node: np.Node, Revision: next, Config: cfg})
			if err != nil {
				return model.Applied{}, err
			}
			ops = append(ops, clientv3.OpPut(DesiredKey(np.Node), string(b)))
		}
		b, _ := json.Marshal(info)
		ops = append(ops, clientv3.OpPut(revisionKey(next), string(b)))
		resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(keyRevision), "=", snap.metaMod)).Then(ops...).Commit()
		if err != nil {
			return model.Applied{}, err
		}
		if resp.Succeeded {
			c.plan.BaseRevision = snap.rev
			return model.Applied{Revision: next, Plan: c.plan}, nil
		}
		if req.ExpectedRevision != nil || attempt == 4 {
			return model.Applied{}, fmt.Errorf("%w: the desired state changed while this change was applied (revision %d is no longer current)", ErrConflict, snap.rev)
		}
	}
}

// Rollback makes revision rev's desired state the current one, as a new
// revision (nodes added since are removed, nodes changed get rev's
// config back).
func (s *Store) Rollback(ctx context.Context, req model.RollbackRequest) (model.Applied, error) {
	target := &snapshot{nodes: map[string]model.NodeDesired{}}
	if req.Revision > 0 {
		resp, err := s.cli.Get(ctx, revisionKey(req.Revision))
		if err != nil {
			return model.Applied{}, err
		}
		if len(resp.Kvs) == 0 {
			return model.Applied{}, fmt.Errorf("%w: no revision %d", ErrNotFound, req.Revision)
		}
		target, err = s.read(ctx, clientv3.WithRev(resp.Kvs[0].ModRevision))
		if errors.Is(err, rpctypes.ErrCompacted) {
			return model.Applied{}, fmt.Errorf("%w: revision %d's state was compacted out of etcd", ErrCompacted, req.Revision)
		}
		if err != nil {
			return model.Applied{}, err
		}
	}
	cur, err := s.read(ctx)
	if err != nil {
		return model.Applied{}, err
	}
	cr := model.ChangeRequest{Nodes: map[string]model.NodeConfig{}, ExpectedRevision: req.ExpectedRevision, Comment: req.Comment}
	if cr.ExpectedRevision == nil {
		// The removals below are computed on cur: a change in between
		// would make them wrong, so the rollback is conditional on cur.
		cr.ExpectedRevision = &cur.rev
	}
	for n, d := range target.nodes {
		cr.Nodes[n] = d.Config
	}
	for n := range cur.nodes {
		if _, ok := target.nodes[n]; !ok {
			cr.Remove = append(cr.Remove, n)
		}
	}
	sort.Strings(cr.Remove)
	return s.apply(ctx, cr, &req.Revision)
}

// Revisions lists the revisions, newest first (at most limit; 0: all).
func (s *Store) Revisions(ctx context.Context, limit int64) (model.RevisionList, error) {
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend)}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(limit))
	}
	resp, err := s.cli.Get(ctx, keyRevisions, opts...)
	if err != nil {
		return model.RevisionList{}, err
	}
	out := model.RevisionList{Revisions: []model.RevisionInfo{}}
	for _, kv := range resp.Kvs {
		var ri model.RevisionInfo
		if err := json.Unmarshal(kv.Value, &ri); err != nil {
			return out, fmt.Errorf("%s: %w", kv.Key, err)
		}
		out.Revisions = append(out.Revisions, ri)
	}
	snap, err := s.read(ctx)
	if err != nil {
		return out, err
	}
	out.Current = snap.rev
	return out, nil
}

// Watch sends the state of every node, a "synced" event, then every
// change as it is applied, until ctx ends or etcd's watch fails (the
// caller starts again: a watch is level-based, its first events are the
// whole state).
func (s *Store) Watch(ctx context.Context, send func(model.WatchEvent) error) error {
	snap, err := s.read(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(snap.nodes))
	for n := range snap.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := snap.nodes[n]
		if err := send(model.WatchEvent{Kind: model.WatchEventKindState, Node: n, Revision: d.Revision, Config: &d.Config}); err != nil {
			return err
		}
	}
	if err := send(model.WatchEvent{Kind: model.WatchEventKindSynced, Revision: snap.rev}); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	// A put carries its revision in the value; a removal's is read from
	// meta/revision as of the removal's etcd revision.
	for wr := range s.cli.Watch(wctx, Prefix+"desired/", clientv3.WithPrefix(), clientv3.WithRev(snap.etcdRev+1)) {
		if err := wr.Err(); err != nil {
			return err
		}
		rev := snap.rev
		for _, ev := range wr.Events {
			node := strings.TrimPrefix(string(ev.Kv.Key), keyDesired)
			if ev.Type == clientv3.EventTypeDelete {
				r, _ := s.revisionAt(ctx, ev.Kv.ModRevision)
				if r > 0 {
					rev = r
				}
				if err := send(model.WatchEvent{Kind: model.WatchEventKindRemove, Node: node, Revision: rev}); err != nil {
					return err
				}
				continue
			}
			var d model.NodeDesired
			if err := json.Unmarshal(ev.Kv.Value, &d); err != nil {
				return fmt.Errorf("%s: %w", ev.Kv.Key, err)
			}
			rev = d.Revision
			if err := send(model.WatchEvent{Kind: model.WatchEventKindPut, Node: node, Revision: d.Revision, Config: &d.Config}); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// revisionAt is our revision as of etcd revision etcdRev.
func (s *Store) revisionAt(ctx context.Context, etcdRev int64) (int64, error) {
	resp, err := s.cli.Get(ctx, keyRevision, clientv3.WithRev(etcdRev))
	if err != nil || len(resp.Kvs) == 0 {
		return 0, err
	}
	return strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
}
