package agents

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
)

// Every format version before the current one has an upgrade step, so
// raising CheckpointVersion without one fails here.
func TestCheckpointUpgradeSteps(t *testing.T) {
	t.Parallel()
	if len(checkpointUpgrades) != CheckpointVersion-1 {
		t.Fatalf("%d checkpoint upgrade steps for format version %d, want %d (one from each earlier version)",
			len(checkpointUpgrades), CheckpointVersion, CheckpointVersion-1)
	}
	for i, step := range checkpointUpgrades {
		if step == nil {
			t.Errorf("upgrade step from version %d is nil", i+1)
		}
	}
}

// upgradeCheckpoint applies the steps from the stored version onwards, in
// order, and stamps each step's target version.
func TestUpgradeCheckpointChain(t *testing.T) {
	t.Parallel()
	var applied []int
	step := func(from int, f func(map[string]json.RawMessage) error) func(map[string]json.RawMessage) error {
		return func(obj map[string]json.RawMessage) error {
			if got := string(obj["version"]); got != strconv.Itoa(from) {
				t.Errorf("step from %d sees version %s", from, got)
			}
			applied = append(applied, from)
			return f(obj)
		}
	}
	steps := []func(map[string]json.RawMessage) error{
		// 1 → 2: "turns" renamed to "turn".
		step(1, func(obj map[string]json.RawMessage) error {
			obj["turn"] = obj["turns"]
			delete(obj, "turns")
			return nil
		}),
		// 2 → 3: a new member with a default.
		step(2, func(obj map[string]json.RawMessage) error {
			obj["agent"] = json.RawMessage(`"default"`)
			return nil
		}),
	}
	tests := []struct {
		from    int
		in      string
		applied []int
		want    map[string]string
	}{
		{1, `{"version":1,"turns":3}`, []int{1, 2}, map[string]string{"version": "3", "turn": "3", "agent": `"default"`}},
		{2, `{"version":2,"turn":4}`, []int{2}, map[string]string{"version": "3", "turn": "4", "agent": `"default"`}},
		{3, `{"version":3,"turn":5}`, nil, map[string]string{"version": "3", "turn": "5"}},
	}
	for _, tc := range tests {
		applied = nil
		out, err := upgradeCheckpoint([]byte(tc.in), tc.from, steps)
		if err != nil {
			t.Fatalf("from %d: %v", tc.from, err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Errorf("from %d: got %s", tc.from, out)
		}
		for k, v := range tc.want {
			if string(got[k]) != v {
				t.Errorf("from %d: %s = %s, want %s (all: %s)", tc.from, k, got[k], v, out)
			}
		}
		if len(applied) != len(tc.applied) || (len(applied) > 0 && applied[0] != tc.applied[0]) {
			t.Errorf("from %d: steps applied %v, want %v", tc.from, applied, tc.applied)
		}
	}

	failing := []func(map[string]json.RawMessage) error{func(map[string]json.RawMessage) error { return errors.New("boom") }}
	if _, err := upgradeCheckpoint([]byte(`{"version":1}`), 1, failing); !errors.Is(err, ErrBadCheckpoint) {
		t.Errorf("failing step: %v, want ErrBadCheckpoint", err)
	}
	for _, from := range []int{0, 4} {
		if _, err := upgradeCheckpoint([]byte(`{}`), from, steps); !errors.Is(err, ErrCheckpointVersion) {
			t.Errorf("from %d: %v, want ErrCheckpointVersion", from, err)
		}
	}
	if _, err := upgradeCheckpoint([]byte(`null`), 1, steps); !errors.Is(err, ErrBadCheckpoint) {
		t.Errorf("null: %v, want ErrBadCheckpoint", err)
	}
}
