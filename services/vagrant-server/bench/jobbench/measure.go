package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/natsembed"
)

// measurement is one build with one runner count: its processes, client and database.
type measurement struct {
	env       *env
	build     build
	n         int
	dir       string
	dbName    string
	nats      *natsembed.Server
	server    *proc
	runners   []*proc
	conn      *grpc.ClientConn
	client    vagrant.VagrantClient
	db        *pgx.Conn // search_path vagrant: the server's schema
	token     string
	serverEnv []string
	runnerEnv []string
}

func (e *env) measure(ctx context.Context, o options, b build, n int) (result, error) {
	m := &measurement{env: e, build: b, n: n, dir: filepath.Join(e.work, fmt.Sprintf("%s-%d", b.label, n)),
		serverEnv: o.serverEnv, runnerEnv: o.runnerEnv}
	defer m.close()
	if err := m.start(ctx); err != nil {
		return result{}, err
	}
	res := result{label: b.label, runners: n}
	// Warm up connections, caches and the runners' first streams.
	if _, err := m.phase(ctx, burst(100, 8)); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	idle, err := m.idleRates(ctx)
	if err != nil {
		return res, err
	}
	if o.statements {
		if _, err := m.db.Exec(ctx, `SELECT public.pg_stat_statements_reset()`); err != nil {
			return res, err
		}
	}
	if res.burst, err = m.phase(ctx, burst(o.burstJobs, o.burstConc)); err != nil {
		return res, fmt.Errorf("burst: %w", err)
	}
	if o.statements {
		m.printStatements(ctx, o.burstJobs)
	}
	res.burst.subtractIdle(idle)
	if o.statements {
		if _, err := m.db.Exec(ctx, `SELECT public.pg_stat_statements_reset()`); err != nil {
			return res, err
		}
	}
	st := steady(o.rate, o.steady)
	if res.steady, err = m.phase(ctx, st); err != nil {
		return res, fmt.Errorf("steady: %w", err)
	}
	if o.statements {
		m.printStatements(ctx, st.jobs)
	}
	res.steady.subtractIdle(idle)
	for _, p := range append([]*proc{m.server}, m.runners...) {
		if err := p.exited(); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (m *measurement) start(ctx context.Context) error {
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return err
	}
	var dbURL string
	var err error
	if m.dbName, dbURL, err = m.env.database(ctx); err != nil {
		return err
	}
	if o := m.env.opts; o.statements {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, `CREATE EXTENSION pg_stat_statements`)
		conn.Close(ctx)
		if err != nil {
			return err
		}
	}
	if m.nats, err = m.env.nats(m.dir); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	// The burst is one token's: a limit on unfinished jobs it cannot reach keeps the quota's
	// cost (the owner's lock and count in every queueing commit) in the figures without
	// refusing any job; -server-env may set another.
	m.server, err = startProc("vagrant-server", filepath.Join(m.build.dir, "vagrant-server"), filepath.Join(m.dir, "server.log"),
		append([]string{"PLINTH_DATABASE_URL=" + dbURL, "PLINTH_NATS_URL=" + m.nats.ClientURL(), "PLINTH_GRPC_ADDR=" + addr,
			"PLINTH_ADMIN_ADDR=off", "PLINTH_LOG_FORMAT=json", "PLINTH_VAGRANT_MAX_QUEUED_JOBS_PER_USER=1000000000"}, m.serverEnv...))
	if err != nil {
		return err
	}
	if m.conn, err = grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		return err
	}
	m.client = vagrant.NewVagrantClient(m.conn)
	if err := waitFor(ctx, 60*time.Second, "the server to answer", func() (bool, error) {
		_, err := m.client.GetVersionInfo(ctx, &emptypb.Empty{})
		return err == nil, m.server.exited()
	}); err != nil {
		return err
	}
	tok, err := m.client.BootstrapToken(m.call(ctx), &emptypb.Empty{})
	if err != nil {
		return fmt.Errorf("bootstrap a token: %w", err)
	}
	m.token = tok.GetToken()
	for i := range m.n {
		r, err := startProc(fmt.Sprintf("vagrant-runner %d", i), filepath.Join(m.build.dir, "vagrant-runner"),
			filepath.Join(m.dir, fmt.Sprintf("runner-%d.log", i)), append([]string{
				"PLINTH_VAGRANT_SERVER_ADDR=" + addr, "PLINTH_VAGRANT_TOKEN=" + m.token,
				"PLINTH_VAGRANT_RUNNER_STATE_DIR=" + filepath.Join(m.dir, "runner-"+strconv.Itoa(i)),
				"PLINTH_ADMIN_ADDR=off", "PLINTH_LOG_FORMAT=json"}, m.runnerEnv...))
		if err != nil {
			return err
		}
		m.runners = append(m.runners, r)
	}
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["search_path"] = "vagrant"
	if m.db, err = pgx.ConnectConfig(ctx, cfg); err != nil {
		return err
	}
	return waitFor(ctx, 60*time.Second, "the runners to register", func() (bool, error) {
		var online int
		err := m.db.QueryRow(ctx, `SELECT count(*) FROM runners WHERE online`).Scan(&online)
		return err == nil && online == m.n, nil
	})
}

// call adds the protocol header and the token, as a Vagrant client does.
func (m *measurement) call(ctx context.Context) context.Context {
	md := metadata.Pairs("client-api-protocol", "1,1")
	if m.token != "" {
		md.Set("authorization", m.token)
	}
	return metadata.NewOutgoingContext(ctx, md)
}

func (m *measurement) close() {
	for _, r := range m.runners {
		r.stop(20 * time.Second)
	}
	if m.server != nil {
		m.server.stop(20 * time.Second)
	}
	if m.conn != nil {
		m.conn.Close()
	}
	if m.db != nil {
		m.db.Close(context.Background())
	}
	if m.nats != nil {
		m.nats.Shutdown()
	}
	if m.dbName != "" {
		m.env.dropDatabase(m.dbName)
	}
}

// waitFor polls cond every 50 ms until it holds, fails, or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var errJobsFailed = errors.New("jobs failed")

// printStatements prints the statements that cost Postgres most, per job.
func (m *measurement) printStatements(ctx context.Context, jobs int) {
	rows, err := m.db.Query(ctx, `SELECT calls, total_exec_time, left(regexp_replace(query, '\s+', ' ', 'g'), 110)
		FROM public.pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT 25`)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pg_stat_statements:", err)
		return
	}
	defer rows.Close()
	fmt.Fprintf(os.Stderr, "%8s %10s  %s\n", "calls/job", "µs/job", "statement")
	for rows.Next() {
		var calls int64
		var total float64
		var q string
		if rows.Scan(&calls, &total, &q) == nil {
			fmt.Fprintf(os.Stderr, "%8.2f %10.1f  %s\n", float64(calls)/float64(jobs), total*1000/float64(jobs), q)
		}
	}
}
