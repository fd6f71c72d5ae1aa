package restore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

func recoveryCluster(target string) []byte {
	return []byte(`{"metadata":{"name":"pg2"},"spec":{"bootstrap":{"recovery":{"source":"origin","recoveryTarget":` + target + `}}}}`)
}

func TestParseTargetAndSettings(t *testing.T) {
	cases := []struct {
		target string
		want   []string
	}{
		{`{"targetName":"before-drop","targetTLI":"latest"}`, []string{"recovery_target_timeline = 'latest'", "recovery_target_name = 'before-drop'"}},
		{`{"targetTime":"2026-01-02T03:04:05.5+01:00"}`, []string{"recovery_target_time = '2026-01-02 02:04:05.5+00'", "recovery_target_inclusive = 'true'"}},
		{`{"targetLSN":"0/3000060","exclusive":true}`, []string{"recovery_target_lsn = '0/3000060'", "recovery_target_inclusive = 'false'"}},
		{`{"targetXID":"742"}`, []string{"recovery_target_xid = '742'", "recovery_target_inclusive = 'true'"}},
		{`{"targetImmediate":true}`, []string{"recovery_target = 'immediate'"}},
		{`{"targetName":"it's"}`, []string{"recovery_target_name = 'it''s'"}},
		{`{"backupID":"20260102T030405"}`, nil},
	}
	for _, c := range cases {
		tg, err := ParseTarget(recoveryCluster(c.target))
		if err != nil {
			t.Fatalf("%s: %v", c.target, err)
		}
		if got := tg.settings(); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: settings %q, want %q", c.target, got, c.want)
		}
	}
	if tg, err := ParseTarget([]byte(`{"metadata":{"name":"x"},"spec":{}}`)); err != nil || len(tg.settings()) != 0 {
		t.Fatalf("no target: %+v %v", tg, err)
	}
	for target, field := range map[string]string{
		`{"targetName":"a","targetXID":"1"}`: "recoveryTarget",
		`{"targetLSN":"nope"}`:               "targetLSN",
		`{"targetTime":"yesterday"}`:         "targetTime",
		`{"targetXID":"x1"}`:                 "targetXID",
		`{"targetTLI":"next"}`:               "targetTLI",
		`{"backupID":"last"}`:                "backupID",
	} {
		_, err := ParseTarget(recoveryCluster(target))
		var be *backup.Error
		if !errors.As(err, &be) || be.Kind != backup.KindInvalid || !strings.Contains(be.Field, field) {
			t.Errorf("%s: %v, want InvalidArgument on %s", target, err, field)
		}
	}
}

func done(id string, endHour int, endLSN backup.LSN, tli uint32) backup.Stored {
	return backup.Stored{ID: id, Archives: []backup.Archive{{Base: "data"}}, Info: &backup.Info{
		ID: id, Status: backup.StatusDone, EndTime: time.Date(2026, 1, 1, endHour, 0, 0, 0, time.UTC), EndLSN: endLSN, Timeline: tli,
	}}
}

func TestChoose(t *testing.T) {
	failed := done("20260101T050000", 6, 0x6000000, 1)
	failed.Info.Status = backup.StatusFailed
	all := []backup.Stored{
		done("20260101T010000", 2, 0x2000000, 1),
		done("20260101T030000", 4, 0x4000000, 2),
		failed,
	}
	cases := []struct {
		target string
		want   string
		kind   backup.Kind
	}{
		{`{}`, "20260101T030000", 0},
		{`{"targetTime":"2026-01-01T03:00:00Z"}`, "20260101T010000", 0},
		{`{"targetTime":"2026-01-01T04:00:00Z"}`, "20260101T030000", 0},
		{`{"targetTime":"2026-01-01T01:00:00Z"}`, "", backup.KindNotFound},
		{`{"targetLSN":"0/3000000"}`, "20260101T010000", 0},
		{`{"targetTLI":"1"}`, "20260101T010000", 0},
		{`{"backupID":"20260101T010000"}`, "20260101T010000", 0},
		{`{"backupID":"20260101T050000"}`, "", backup.KindPrecondition},
		{`{"backupID":"20260101T090000"}`, "", backup.KindNotFound},
	}
	for _, c := range cases {
		tg, err := ParseTarget(recoveryCluster(c.target))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tg.choose(all)
		var be *backup.Error
		switch {
		case c.kind != 0 && (!errors.As(err, &be) || be.Kind != c.kind):
			t.Errorf("%s: %v, want error kind %d", c.target, err, c.kind)
		case c.kind == 0 && (err != nil || got.ID != c.want):
			t.Errorf("%s: %s %v, want %s", c.target, got.ID, err, c.want)
		}
	}
}

func TestCommand(t *testing.T) {
	c := Command{Binary: "/opt/my plugin/cnpgi-plugin", Socket: "/plugins/cnpgi.plinth.dev", Plugin: "cnpgi.plinth.dev"}
	cmd, envs := c.For("s3", "pg15")
	want := `'/opt/my plugin/cnpgi-plugin' wal-restore -socket=/plugins/cnpgi.plinth.dev -plugin-name=cnpgi.plinth.dev -object-store=s3 -server-name=pg15 %f %p`
	if cmd != want || len(envs) != 4 || envs[2] != "PLINTH_CNPGI_OBJECT_STORE=s3" {
		t.Fatalf("%s %q", cmd, envs)
	}
	if q := confQuote(`a'b\c`); q != `'a''b\\c'` {
		t.Fatalf("confQuote %s", q)
	}
	c.Fixed = "/controller/manager wal-restore %f %p"
	if cmd, _ := c.For("s3", "pg15"); cmd != c.Fixed {
		t.Fatalf("fixed command %s", cmd)
	}
}
