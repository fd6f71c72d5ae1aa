package inventorytest

import (
	"time"

	"github.com/jackc/pgx/v5"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

// machineEvent is a MachineStateChanged of machine name of cluster c at at.
func machineEvent(name, c string, state eventsv1.MachineState, at time.Time) inventory.Machine {
	return inventory.Machine{Name: name, Cluster: c, Pool: "workers", Role: eventsv1.MachineRole_MACHINE_ROLE_WORKER, State: state,
		Addresses: []string{"10.1.0.1"}, Provider: "netns", ProviderID: "id-" + name, ProviderStatus: state.String(),
		Message: "at " + at.String(), FirstSeen: at, ChangedAt: at}
}

func machineBehaviours() []behaviour {
	const (
		ready        = eventsv1.MachineState_MACHINE_STATE_READY
		provisioning = eventsv1.MachineState_MACHINE_STATE_PROVISIONING
		failed       = eventsv1.MachineState_MACHINE_STATE_FAILED
	)
	record := func(st *StoreTest, m inventory.Machine) {
		st.Record(func(s Store, tx pgx.Tx) error { return inventory.RecordMachine(st.Ctx, s, tx, m) })
	}
	return []behaviour{
		{Name: "machine/the newest state wins, with the earliest sighting", Run: func(st *StoreTest) {
			newest := machineEvent("m1", "c1", ready, sec(2))
			record(st, newest)
			record(st, machineEvent("m1", "c1", provisioning, sec(0))) // late
			record(st, machineEvent("m0", "c2", failed, sec(1)))
			st.Restart()
			ms := testenv.Must(st.Store().Machines(st.Ctx))(st.T)
			if len(ms) != 2 || ms[0].Name != "m0" || ms[1].Name != "m1" {
				st.T.Fatalf("machines %+v; want m0 and m1, by name", ms)
			}
			want := newest
			want.FirstSeen = sec(0)
			got := ms[1]
			got.FirstSeen, got.ChangedAt = got.FirstSeen.UTC(), got.ChangedAt.UTC() // whatever zone the store reads in
			if describe(got) != describe(want) {
				st.T.Fatalf("m1 %+v\nwant %+v", ms[1], want)
			}
		}},
		{Name: "machine/a deleted cluster's machines are released unless they changed since", Run: func(st *StoreTest) {
			record(st, machineEvent("m1", "c1", ready, sec(2)))
			record(st, machineEvent("m2", "c1", failed, sec(0)))
			record(st, machineEvent("m3", "c2", ready, sec(0)))
			st.Record(func(s Store, tx pgx.Tx) error { return inventory.ReleaseMachines(st.Ctx, s, tx, "c1", sec(1)) })
			st.Restart()
			ms := testenv.Must(st.Store().Machines(st.Ctx))(st.T)
			if len(ms) != 2 || ms[0].Name != "m1" || ms[1].Name != "m3" {
				st.T.Fatalf("after c1's deletion at 1s: %+v; want m1 (changed later) and m3 (another cluster)", ms)
			}
			// A late event from before the release does not bring m2 back.
			record(st, machineEvent("m2", "c1", ready, sec(0)))
			if ms := testenv.Must(st.Store().Machines(st.Ctx))(st.T); len(ms) != 2 {
				st.T.Fatalf("a late event revived a released machine: %+v", ms)
			}
			if n := testenv.Must(st.Store().Forget(st.Ctx, inventory.Forgetting{Before: sec(1)}))(st.T); n != 0 {
				st.T.Fatalf("forgot %d; released at 1s is not before 1s", n)
			}
			if n := testenv.Must(st.Store().Forget(st.Ctx, inventory.Forgetting{Before: sec(2)}))(st.T); n != 1 {
				st.T.Fatalf("forgot %d; want the released m2 only (the others are not released)", n)
			}
			st.Restart()
			if ms := testenv.Must(st.Store().Machines(st.Ctx))(st.T); len(ms) != 2 {
				st.T.Fatalf("forgetting took a live machine: %+v", ms)
			}
		}},
	}
}
