package app_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
)

// TestLVNameLongerThanLvmTakesIsInvalidArgument (issue #36, "LV names of 119–127 bytes →
// Internal"): lvcreate refuses a volume whose "vg/lv" path is longer than 125 bytes, so on a
// class whose volume group is N bytes a name longer than 124-N bytes — up to the 127 any
// name may have — is refused with InvalidArgument naming the field, without an ERROR log
// line, and the longest lvm takes is made.
func TestLVNameLongerThanLvmTakesIsInvalidArgument(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 2 << 30})
	a := e.start(t, e.config(t))
	ctx := ctxT(t)
	longest := 125 - len(e.vgs[0].Name) - 1
	for n := longest + 1; n <= 127; n++ {
		_, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: strings.Repeat("a", n), SizeGb: 1})
		wantCode(t, err, codes.InvalidArgument, "name", "at most")
	}
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: strings.Repeat("a", longest), SizeGb: 1}); err != nil {
		t.Fatalf("a name of %d bytes in volume group %s: %v", longest, e.vgs[0].Name, err)
	}
	if strings.Contains(e.logs.String(), `"level":"ERROR"`) {
		t.Fatal("a client's too-long name was logged at ERROR")
	}
}
