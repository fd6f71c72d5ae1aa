package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// resourceSample is one scrape of one service.
type resourceSample struct {
	at                   time.Time
	service              string
	rssBytes, goroutines float64
	openFDs              float64
}

// latencySample is one load window of one target.
type latencySample struct {
	at       time.Time
	target   string
	calls    int
	errors   int
	p99      time.Duration
	rps      float64
	problems map[string]int
}

// flowCount counts one kind of end-to-end operation.
type flowCount struct{ ok, failed int }

// recorder collects the samples of the whole run.
type recorder struct {
	mu        sync.Mutex
	start     time.Time
	resources []resourceSample
	latencies []latencySample
	flows     map[string]*flowCount
}

func newRecorder() *recorder { return &recorder{start: time.Now(), flows: map[string]*flowCount{}} }

func (r *recorder) resource(s resourceSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resources = append(r.resources, s)
}

func (r *recorder) latency(s latencySample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latencies = append(r.latencies, s)
}

func (r *recorder) flow(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.flows[name]
	if f == nil {
		f = &flowCount{}
		r.flows[name] = f
	}
	if err != nil {
		f.failed++
		if f.failed <= 5 {
			fmt.Printf("%s failed: %v\n", name, err)
		}
		return
	}
	f.ok++
}

// sample scrapes every service's /metrics each interval until ctx ends.
func sample(ctx context.Context, s *suite, interval time.Duration, rec *recorder) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for _, e := range s.endpoints.Services {
			if m, err := scrape(ctx, e.Admin); err == nil {
				rec.resource(resourceSample{at: time.Now(), service: e.Name, rssBytes: m["process_resident_memory_bytes"],
					goroutines: m["go_goroutines"], openFDs: m["process_open_fds"]})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// scrape reads the unlabelled gauges of a /metrics page.
func scrape(ctx context.Context, admin string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(strings.Fields(value)[0], 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// write stores the samples as TSV files in dir.
func (r *recorder) write(dir string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	b.WriteString("seconds\tservice\trss_mib\tgoroutines\topen_fds\n")
	for _, s := range r.resources {
		fmt.Fprintf(&b, "%.0f\t%s\t%.1f\t%.0f\t%.0f\n", s.at.Sub(r.start).Seconds(), s.service, s.rssBytes/(1<<20), s.goroutines, s.openFDs)
	}
	if err := os.WriteFile(filepath.Join(dir, "resources.tsv"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	b.Reset()
	b.WriteString("seconds\ttarget\tcalls\terrors\trps\tp99_ms\n")
	for _, s := range r.latencies {
		fmt.Fprintf(&b, "%.0f\t%s\t%d\t%d\t%.0f\t%.2f\n", s.at.Sub(r.start).Seconds(), s.target, s.calls, s.errors, s.rps, float64(s.p99)/1e6)
	}
	return os.WriteFile(filepath.Join(dir, "latency.tsv"), []byte(b.String()), 0o644)
}

// report prints the curves' start, end and peak per service and the load's figures, and
// reports whether everything stayed flat and error-free. The first fifth of the run is
// warm-up (caches, pools, JIT-like effects in Postgres); growth is judged from its end.
func (r *recorder) report(w io.Writer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := true
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "service\tRSS MiB (warm → end, peak)\tgoroutines (warm → end, peak)\topen fds (warm → end, peak)\tverdict")
	byService := map[string][]resourceSample{}
	for _, s := range r.resources {
		byService[s.service] = append(byService[s.service], s)
	}
	names := make([]string, 0, len(byService))
	for n := range byService {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ss := byService[n]
		warm := ss[len(ss)/5]
		end := ss[len(ss)-1]
		peak := func(f func(resourceSample) float64) float64 {
			m := 0.0
			for _, s := range ss {
				m = max(m, f(s))
			}
			return m
		}
		rss := func(s resourceSample) float64 { return s.rssBytes / (1 << 20) }
		gor := func(s resourceSample) float64 { return s.goroutines }
		fds := func(s resourceSample) float64 { return s.openFDs }
		verdict := "flat"
		if rss(end) > rss(warm)*1.25+16 || gor(end) > gor(warm)*1.2+20 || fds(end) > fds(warm)*1.2+10 {
			verdict, ok = "GROWING", false
		}
		fmt.Fprintf(tw, "%s\t%.0f → %.0f, %.0f\t%.0f → %.0f, %.0f\t%.0f → %.0f, %.0f\t%s\n", n,
			rss(warm), rss(end), peak(rss), gor(warm), gor(end), peak(gor), fds(warm), fds(end), peak(fds), verdict)
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "target\twindows\tcalls\terrors\tcalls/s\tp99 ms (min, median, max)")
	byTarget := map[string][]latencySample{}
	for _, s := range r.latencies {
		byTarget[s.target] = append(byTarget[s.target], s)
	}
	targets := make([]string, 0, len(byTarget))
	for n := range byTarget {
		targets = append(targets, n)
	}
	sort.Strings(targets)
	for _, n := range targets {
		ss := byTarget[n]
		calls, errs, rps := 0, 0, 0.0
		var p99s []float64
		problems := map[string]int{}
		for _, s := range ss {
			calls, errs, rps = calls+s.calls, errs+s.errors, rps+s.rps
			p99s = append(p99s, float64(s.p99)/1e6)
			for k, v := range s.problems {
				problems[k] += v
			}
		}
		slices.Sort(p99s)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.1f, %.1f, %.1f\n", n, len(ss), calls, errs, rps/float64(len(ss)),
			p99s[0], p99s[len(p99s)/2], p99s[len(p99s)-1])
		if errs > 0 {
			ok = false
			for k, v := range problems {
				fmt.Fprintf(tw, "\t\t\t%d × %s\t\t\n", v, k)
			}
		}
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	flows := make([]string, 0, len(r.flows))
	for n := range r.flows {
		flows = append(flows, n)
	}
	sort.Strings(flows)
	for _, n := range flows {
		f := r.flows[n]
		fmt.Fprintf(w, "%s: %d done, %d failed\n", n, f.ok, f.failed)
		ok = ok && f.failed == 0
	}
	return ok
}
