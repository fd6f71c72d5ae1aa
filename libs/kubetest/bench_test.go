package kubetest_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

// iteration is a testing.TB whose cleanups run at the end of one benchmark iteration instead
// of the whole benchmark, so each iteration starts and stops a cluster of its own.
type iteration struct {
	testing.TB
	cleanups []func()
}

func (it *iteration) Cleanup(f func()) { it.cleanups = append(it.cleanups, f) }

func (it *iteration) close() {
	for i := len(it.cleanups) - 1; i >= 0; i-- {
		it.cleanups[i]()
	}
}

// rssMiB sums the resident memory of the processes whose command line mentions dir, by
// program name.
func rssMiB(b *testing.B, dir string) map[string]float64 {
	sums := map[string]float64{}
	for _, proc := range processesUsing(dir) {
		pid, name, _ := strings.Cut(proc, " ")
		f, err := os.Open(filepath.Join("/proc", pid, "status"))
		if err != nil {
			continue
		}
		scanner := bufio.NewScanner(f)
		for scanner.Scan() {
			if fields := strings.Fields(scanner.Text()); len(fields) >= 2 && fields[0] == "VmRSS:" {
				kib, _ := strconv.ParseFloat(fields[1], 64)
				sums[strings.TrimSuffix(name, "-"+kubetest.DefaultVersion)] += kib / 1024
			}
		}
		_ = f.Close()
	}
	if len(sums) == 0 {
		b.Fatalf("no processes found using %s", dir)
	}
	return sums
}

// BenchmarkStart measures Start to ready (ns/op) and the resident memory of each component
// right after. Run: go test -run '^$' -bench Start -benchtime 3x ./libs/kubetest/
func BenchmarkStart(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts func(testing.TB) kubetest.Options
	}{
		{"apiserver", func(testing.TB) kubetest.Options { return kubetest.Options{} }},
		{"controller-manager+kwok", func(testing.TB) kubetest.Options {
			return kubetest.Options{ControllerManager: true, Kwok: true}
		}},
		{"37-upstream-CRDs", func(t testing.TB) kubetest.Options {
			crds := append(kubetest.RookCRDs(t), kubetest.CertManagerCRDs(t)...)
			crds = append(crds, kubetest.CNPGCRDs(t)...)
			return kubetest.Options{CRDs: append(crds, kubetest.KoorCRDs(t)...)}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := bc.opts(b) // parsing the CRDs is not part of the start
			total := map[string]float64{}
			for range b.N {
				it := &iteration{TB: b}
				c := kubetest.Start(it, opts)
				for name, mib := range rssMiB(b, filepath.Dir(c.KubeconfigPath())) {
					total[name] += mib
				}
				b.StopTimer()
				it.close()
				b.StartTimer()
			}
			for name, mib := range total {
				b.ReportMetric(mib/float64(b.N), name+"-RSS-MiB")
			}
		})
	}
}
