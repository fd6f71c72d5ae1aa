package upstreamtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/kernelvm"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/agenttest"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm/lvmtest"
)

// The modules topolvm021 and topolvm041 drive the agent with TopoLVM v0.21.0's and v0.41.0's
// generated clients. They pin versions of the Go module this one pins at v0.11.0, so each is
// a module of its own, outside the workspace, tested here with GOWORK=off against an agent
// on loop-backed volume groups with an lvcreate option class.

// TestTopoLVM021ClientDrivesTheAgent: option classes in field 5 with sizes in GiB (v0.18 to
// v0.22's wire, neither the fork's nor today's).
func TestTopoLVM021ClientDrivesTheAgent(t *testing.T) {
	t.Parallel()
	env, vgSize := optionClassAgent(t)
	runClientModule(t, "topolvm021", "TestTopoLVM021Client", "LVMD_AGENT_SOCKET="+env.Socket(), "LVMD_AGENT_VG_SIZE="+vgSize)
	// The option class's options reached lvcreate: lv_attr's third character is the
	// allocation policy.
	lvs, err := env.VGs[0].Runner.LVs(context.Background(), env.VGs[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(lvs) != 1 || lvs[0].Name != "5b2e8d1c-7f3a-4e6b-9c0d-000000000021" || lvs[0].Attr[2] != 'c' {
		t.Fatalf("volumes after the v0.21.0 client: %+v; want its option class volume, contiguous", lvs)
	}
}

// TestTopoLVM041ClientDrivesTheAgent: sizes in bytes, sub-GiB volumes, ResizeLVResponse,
// path and attr, WatchItem.size_bytes, option classes.
func TestTopoLVM041ClientDrivesTheAgent(t *testing.T) {
	t.Parallel()
	env, vgSize := optionClassAgent(t)
	runClientModule(t, "topolvm041", "TestTopoLVM041Client", "LVMD_AGENT_SOCKET="+env.Socket(), "LVMD_AGENT_VG="+env.VGs[0].Name,
		"LVMD_AGENT_VG_SIZE="+vgSize)
}

// TestTopoLVM041Descriptors keeps libs/api/conformance's copy of TopoLVM v0.41.0's lvmd
// descriptor (its successor contract, TestSuccessorContracts) equal to the module's.
func TestTopoLVM041Descriptors(t *testing.T) {
	t.Parallel()
	runClientModule(t, "topolvm041", "TestDescriptorsGolden")
}

// TestTopoLVM041ThinClientOnDeviceMapper: v0.41.0's generated client on a thin class —
// thin_pool in Watch, CreateLV, CreateLVSnapshot ro and rw, ResizeLV, RemoveLV — on real
// device-mapper (in a VM where this kernel has none). The agent and the client's test binary
// are built here; the VM runs them.
func TestTopoLVM041ThinClientOnDeviceMapper(t *testing.T) {
	bin, client := os.Getenv("LVMD_AGENT_BIN"), os.Getenv("TOPOLVM041_TEST_BIN")
	if !kernelvm.InGuest() {
		bin, client = agenttest.Binary(t, "../.."), buildClientModule(t, "topolvm041")
	}
	if lvmtest.OnDeviceMapper(t, "LVMD_AGENT_BIN="+bin, "TOPOLVM041_TEST_BIN="+client) {
		return
	}
	env := agenttest.NewEnv(t, 1, 2<<30)
	env.VGs[0].ThinPool(t, "pool0", 512<<20)
	env.AddConfig(t, "  - name: thin\n    volume-group: "+env.VGs[0].Name+"\n    spare-gb: 0\n    type: thin\n"+
		"    thin-pool:\n      name: pool0\n      overprovision-ratio: 4\n")
	env.Start(t, bin, "PLINTH_LVMD_POLL_INTERVAL=1s")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, client, "-test.run", "^TestTopoLVM041ThinClient$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "LVMD_AGENT_SOCKET="+env.Socket())
	out, err := cmd.CombinedOutput()
	t.Logf("topolvm041:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestTopoLVM041ThinClient") {
		t.Fatalf("v0.41.0's client on the thin class: %v", err)
	}
}

// buildClientModule compiles the tests of the module dir (GOWORK=off) into a binary.
func buildClientModule(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), dir+".test")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s's tests: %v\n%s", dir, err, msg)
	}
	return out
}

// optionClassAgent starts an agent on two classes (ssd, hdd) and the option class
// "contiguous"; it returns the env and the size of ssd's volume group.
func optionClassAgent(t *testing.T) (*agenttest.Env, string) {
	t.Helper()
	bin := agenttest.Binary(t, "../..")
	env := agenttest.NewEnv(t, 2, 4<<30)
	env.AddConfig(t, "lvcreate-option-classes:\n  - name: contiguous\n    options: [\"--alloc=contiguous\"]\n")
	env.Start(t, bin, "PLINTH_LVMD_POLL_INTERVAL=1s")
	info, err := env.VGs[0].Runner.VG(context.Background(), env.VGs[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	return env, strconv.FormatUint(info.Size, 10)
}

// runClientModule runs test in the module dir with GOWORK=off and the environment extra.
func runClientModule(t *testing.T, dir, test string, extra ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "-run", "^"+test+"$", ".")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), extra...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", dir, out)
	if err != nil {
		t.Fatalf("%s failed against the agent: %v", dir, err)
	}
	if !strings.Contains(string(out), "--- PASS: "+test) {
		t.Fatalf("%s did not run", test)
	}
}
