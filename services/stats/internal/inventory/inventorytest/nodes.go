package inventorytest

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

func class(name string, size, free int64) inventory.DeviceClass {
	return inventory.DeviceClass{Name: name, VolumeGroup: "vg-" + name, SizeBytes: size, FreeBytes: free, Volumes: 1}
}

func heartbeat(ctx context.Context, node string, at time.Time, addr string, classes ...inventory.DeviceClass) func(Store, pgx.Tx) error {
	return func(s Store, tx pgx.Tx) error {
		return inventory.RecordHeartbeat(ctx, s, tx, inventory.Heartbeat{Node: node, At: at, IntervalSeconds: 10,
			Addresses: []string{addr}, AgentVersion: "v-" + addr, Classes: classes})
	}
}

// classes are n's device classes without the times of their reports.
func classes(n inventory.StorageNode) []inventory.DeviceClass {
	out := slices.Clone(n.Classes)
	for i := range out {
		out[i].ObservedAt = time.Time{}
	}
	return out
}

func nodeBehaviours() []behaviour {
	return []behaviour{
		{Name: "node/an empty inventory has no nodes or machines", Run: func(st *StoreTest) {
			if n := testenv.Must(st.Store().StorageNodes(st.Ctx))(st.T); len(n) != 0 {
				st.T.Fatalf("nodes: %+v", n)
			}
			if m := testenv.Must(st.Store().Machines(st.Ctx))(st.T); len(m) != 0 {
				st.T.Fatalf("machines: %+v", m)
			}
		}},
		{Name: "node/heartbeats keep the newest state and count each", Run: func(st *StoreTest) {
			st.Record(heartbeat(st.Ctx, "n1", sec(2), "10.0.0.2", class("ssd", 100, 50), class("hdd", 1000, 900)))
			st.Record(heartbeat(st.Ctx, "n1", sec(1), "10.0.0.1", class("ssd", 100, 99))) // late: counted, but older
			st.Restart()
			nodes := testenv.Must(st.Store().StorageNodes(st.Ctx))(st.T)
			if len(nodes) != 1 {
				st.T.Fatalf("nodes: %+v", nodes)
			}
			n := nodes[0]
			if n.Name != "n1" || n.Heartbeats != 2 || !n.HeartbeatAt.Equal(sec(2)) || !n.FirstSeen.Equal(sec(1)) ||
				describe(n.Addresses) != "[10.0.0.2]" || n.AgentVersion != "v-10.0.0.2" || n.IntervalSeconds != 10 {
				st.T.Fatalf("node %+v: want the newest heartbeat's state, the earliest sighting, both counted", n)
			}
			if describe(classes(n)) != describe([]inventory.DeviceClass{class("hdd", 1000, 900), class("ssd", 100, 50)}) {
				st.T.Fatalf("classes %+v; want the newest heartbeat's, by name", n.Classes)
			}
			for _, c := range n.Classes {
				if !c.ObservedAt.Equal(sec(2)) {
					st.T.Fatalf("class %s observed at %v; want the newest heartbeat's time", c.Name, c.ObservedAt)
				}
			}
			st.Record(heartbeat(st.Ctx, "n1", sec(3), "10.0.0.2", class("ssd", 100, 40))) // drops hdd
			st.Restart()
			if got := classes(testenv.Must(st.Store().StorageNodes(st.Ctx))(st.T)[0]); describe(got) != describe([]inventory.DeviceClass{class("ssd", 100, 40)}) {
				st.T.Fatalf("classes %+v; want hdd dropped", got)
			}
		}},
		{Name: "node/capacity reports keep the newest and may come first", Run: func(st *StoreTest) {
			st.Record(func(s Store, tx pgx.Tx) error {
				return inventory.RecordCapacity(st.Ctx, s, tx, "n1", class("ssd", 100, 60), sec(0))
			})
			st.Restart()
			nodes := testenv.Must(st.Store().StorageNodes(st.Ctx))(st.T)
			if len(nodes) != 1 || !nodes[0].HeartbeatAt.IsZero() || nodes[0].Heartbeats != 0 || !nodes[0].FirstSeen.Equal(sec(0)) ||
				describe(classes(nodes[0])) != describe([]inventory.DeviceClass{class("ssd", 100, 60)}) {
				st.T.Fatalf("after a capacity event: %+v; want the node without a heartbeat", nodes)
			}
			st.Record(heartbeat(st.Ctx, "n1", sec(2), "10.0.0.1", class("ssd", 100, 50)))
			// Older than the heartbeat's view of the class: changes nothing. Newer: taken.
			st.Record(func(s Store, tx pgx.Tx) error {
				return inventory.RecordCapacity(st.Ctx, s, tx, "n1", class("ssd", 100, 1), sec(1))
			})
			st.Restart()
			if got := testenv.Must(st.Store().StorageNodes(st.Ctx))(st.T)[0].Classes[0].FreeBytes; got != 50 {
				st.T.Fatalf("free %d after an older report, want 50", got)
			}
			st.Record(func(s Store, tx pgx.Tx) error {
				return inventory.RecordCapacity(st.Ctx, s, tx, "n1", class("ssd", 100, 30), sec(3))
			})
			if got := testenv.Must(st.Store().StorageNodes(st.Ctx))(st.T)[0].Classes[0].FreeBytes; got != 30 {
				st.T.Fatalf("free %d after a newer report, want 30", got)
			}
		}},
		{Name: "node/an event rolled back changes nothing", Run: func(st *StoreTest) {
			err := st.Opened().InTx(st.Ctx, func(tx pgx.Tx) error {
				if err := heartbeat(st.Ctx, "n1", sec(1), "10.0.0.1", class("ssd", 100, 50))(st.Store(), tx); err != nil {
					return err
				}
				return errRollBack
			})
			if !errors.Is(err, errRollBack) {
				st.T.Fatalf("rolled back: %v", err)
			}
			st.Restart()
			if n := testenv.Must(st.Store().StorageNodes(st.Ctx))(st.T); len(n) != 0 {
				st.T.Fatalf("nodes after a rolled-back heartbeat: %+v", n)
			}
		}},
		{Name: "node/silent nodes are forgotten", Run: func(st *StoreTest) {
			st.Record(heartbeat(st.Ctx, "old", sec(0), "10.0.0.1"))
			st.Record(func(s Store, tx pgx.Tx) error {
				return inventory.RecordCapacity(st.Ctx, s, tx, "never-beat", class("ssd", 1, 1), sec(0))
			})
			st.Record(heartbeat(st.Ctx, "new", sec(10), "10.0.0.2"))
			st.Restart()
			if n := testenv.Must(st.Store().Forget(st.Ctx, inventory.Forgetting{Before: sec(5)}))(st.T); n != 2 {
				st.T.Fatalf("forgot %d, want the node silent since 0s and the one never heard from since", n)
			}
			st.Restart()
			if nodes := testenv.Must(st.Store().StorageNodes(st.Ctx))(st.T); len(nodes) != 1 || nodes[0].Name != "new" {
				st.T.Fatalf("kept %+v", nodes)
			}
		}},
	}
}
