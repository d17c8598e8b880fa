package intent

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"edgeplane/control/internal/apispec"
)

// Store keeps the applied intents' documents in a JSON file, so a restarted
// agent knows the intents behind the rules it finds in the pinned maps. It
// is written whole to a temporary file and renamed: a crash leaves the old
// or the new list, never half of one.
type Store struct{ Path string }

type stored struct {
	ID  string          `json:"id"`
	Doc json.RawMessage `json:"document"`
}

type storeFile struct {
	Intents []stored       `json:"intents"`
	NICLoc  map[uint32]int `json:"nicRules,omitempty"` // flow hash -> ntuple location
}

// Save writes the intents' documents and the NIC rules installed for them.
func (s *Store) Save(ins []Intent, nicLoc map[uint32]int) error {
	f := storeFile{Intents: make([]stored, 0, len(ins)), NICLoc: nicLoc}
	for _, in := range ins {
		f.Intents = append(f.Intents, stored{in.ID, in.Doc})
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return err
	}
	tmp := s.Path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.Path)
}

// Load parses the stored documents again, with the API's parser less its
// schema: a document an earlier version accepted is restored even where
// the schema has since become stricter (an intent id "..", say), with a
// warning that names it.
func (s *Store) Load() ([]Intent, map[uint32]int, error) {
	b, err := os.ReadFile(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var f storeFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, nil, err
	}
	var out []Intent
	for _, st := range f.Intents {
		in, err := parse(st.Doc)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: intent %q: %w", s.Path, st.ID, err)
		}
		if _, err := Parse(st.Doc); err != nil {
			slog.Warn("stored intent restored, but the API would refuse it now; delete and apply it again",
				"file", s.Path, "intent", st.ID, "why", err)
		}
		if err := apispec.CheckNamed("IntentId", st.ID); err != nil {
			slog.Warn("stored intent id cannot be addressed by URL; remove it from the state file to delete it",
				"file", s.Path, "intent", st.ID, "why", err)
		}
		in.ID = st.ID
		out = append(out, in)
	}
	return out, f.NICLoc, nil
}
