package controller

import (
	"context"
	"errors"
	"sort"
	"time"
)

// FleetReport is the controller's periodic JSON line (type "fleet",
// `edgeplane controller --report`): every node of the desired state, the
// revision its configuration is at and the one its agent last converged
// to, so that a system above the controller follows the whole edge's
// convergence from one stream instead of polling each node's status.
type FleetReport struct {
	Time      time.Time   `json:"time"`
	Type      string      `json:"type"` // "fleet"
	Revision  int64       `json:"revision"`
	Nodes     []FleetNode `json:"nodes"`
	Converged int         `json:"converged"` // nodes whose agent reports the node's revision, converged
}

// FleetNode is one node of a FleetReport.
type FleetNode struct {
	Node             string `json:"node"`
	DesiredRevision  int64  `json:"desiredRevision"` // the revision that last changed this node
	ObservedRevision int64  `json:"observedRevision"`
	// Reporting: an agent's status is present (its lease has not expired).
	Reporting bool       `json:"reporting"`
	Converged bool       `json:"converged"`
	Drift     int        `json:"drift"`
	Updated   *time.Time `json:"updated,omitempty"` // the agent's last pass
}

// Fleet reads the desired state and every node's status.
func (s *Store) Fleet(ctx context.Context) (FleetReport, error) {
	snap, err := s.read(ctx)
	if err != nil {
		return FleetReport{}, err
	}
	rep := FleetReport{Time: time.Now().UTC(), Type: "fleet", Revision: snap.rev, Nodes: []FleetNode{}}
	for name, d := range snap.nodes {
		n := FleetNode{Node: name, DesiredRevision: d.Revision}
		st, err := s.Status(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return FleetReport{}, err
		default:
			updated := st.Updated
			n.Reporting, n.ObservedRevision, n.Drift, n.Updated = true, st.ObservedRevision, len(st.Drift), &updated
			n.Converged = st.Converged && st.ObservedRevision >= d.Revision
		}
		if n.Converged {
			rep.Converged++
		}
		rep.Nodes = append(rep.Nodes, n)
	}
	sort.Slice(rep.Nodes, func(i, j int) bool { return rep.Nodes[i].Node < rep.Nodes[j].Node })
	return rep, nil
}
