package grpc

import (
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/authz"

	jobspb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
)

// TestJobActionsNeedAnOperator: the calls that restore, delete or dismiss are writes, so the
// gateway and every interceptor refuse them to a viewer (PermissionDenied) while the lists
// stay readable; an operator may call them.
func TestJobActionsNeedAnOperator(t *testing.T) {
	for _, m := range []string{jobspb.JobService_RestoreBackup_FullMethodName, jobspb.JobService_DeleteBackup_FullMethodName,
		jobspb.JobService_DismissJob_FullMethodName} {
		k := authz.MethodKind(m)
		if authz.Viewer.Allows(k) || !authz.Operator.Allows(k) {
			t.Errorf("%s is %v: a viewer may call it, or an operator may not", m, k)
		}
	}
	for _, m := range []string{jobspb.JobService_ListJobs_FullMethodName, jobspb.VolumeService_GetVolume_FullMethodName} {
		if !authz.Viewer.Allows(authz.MethodKind(m)) {
			t.Errorf("a viewer may not read %s", m)
		}
	}
}

func TestBackupName(t *testing.T) {
	for _, ok := range []string{"backup-vol1-20261206070000", "bk_1", "a.b+c", "X"} {
		if err := backupName("backup.name", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Bad Name!/..", "..", ".hidden", "-x", "a/b", "a b", "ä", string(make([]byte, 256))} {
		if err := backupName("backup.name", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
