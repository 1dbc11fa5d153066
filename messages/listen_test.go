package messages

import (
	"encoding/json"
	"slices"
	"testing"
)

// A listen stream's taskIds: asked for, acknowledged as the subset the
// server echoes, and the only tasks whose notifications/tasks pass.
func TestSubscriptionsTaskIDs(t *testing.T) {
	asked := Subscriptions{ToolsListChanged: true, TaskIDs: []string{"t1", "t2"}}
	b, err := json.Marshal(asked)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"toolsListChanged":true,"taskIds":["t1","t2"]}`; got != want {
		t.Fatalf("params = %s, want %s", got, want)
	}
	if (Subscriptions{TaskIDs: []string{"t1"}}).Empty() {
		t.Fatal("a set of only taskIds is empty")
	}
	var ack Subscriptions
	if err := json.Unmarshal([]byte(`{"toolsListChanged":true,"taskIds":["t2","t9","t2"]}`), &ack); err != nil {
		t.Fatal(err)
	}
	got := asked.Within(ack)
	if !slices.Equal(got.TaskIDs, []string{"t2"}) || !got.ToolsListChanged {
		t.Fatalf("acknowledged = %+v, want tools and task t2 only (t9 not asked, t2 once)", got)
	}
	for _, c := range []struct {
		method, key string
		want        bool
	}{
		{MethodTasks, "t2", true},
		{MethodTasks, "t1", false}, // asked, not acknowledged
		{MethodTasks, "t9", false}, // never asked
		{MethodTasks, "", false},
		{MethodResourceUpdated, "t2", false},
	} {
		if g := got.Allows(c.method, c.key); g != c.want {
			t.Errorf("Allows(%s, %q) = %v, want %v", c.method, c.key, g, c.want)
		}
	}
	if !Subscribable(MethodTasks) {
		t.Error("notifications/tasks is not subscribable: a modern server could push it off the stream")
	}
}
