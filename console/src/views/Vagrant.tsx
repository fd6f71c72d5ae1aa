// Vagrant: jobs with their state, queue a job on any runner or a registered one, cancel one, a
// job's output live, and every registered runner. The Vagrant API takes vagrant-server's own
// tokens: the console gets one for this Plinth session from vagrant-server's
// SessionTokenService (App), so there is no second sign-in; the runner list is Plinth's
// RunnerService and needs only the Plinth session.
import { useState, type FormEvent } from "react";
import type { Client } from "@connectrpc/connect";
import type { Vagrant } from "../gen/hashicorp/vagrant/server_pb";
import type { Runner, RunnerService } from "../gen/plinth/vagrant/v1/runners_pb";
import { usePoll, useAction } from "../lib/hooks";
import { ago, timestampMs } from "../lib/format";
import { allRunners, runnersShown } from "../lib/runners";
import { keptChoice, runnerChoices } from "../lib/vagrantSession";
import { cancelJobQuestion, filterJobs, isCanceled, isFinished, jobError, jobFilters, jobState, newJob, operationOf, queueableOps, sortJobs, type JobFilter, type QueueableOp } from "../lib/vagrant";
import { readOnlyNotice } from "../lib/roles";
import { objectPath } from "../lib/routes";
import { DoneLine, ErrorLine, Id, Loading, Panel, Refreshed, TableWrap } from "./ui";
import { JobOutput } from "./JobOutput";
import { VagrantRegistry } from "./VagrantRegistry";
import { VagrantRunners } from "./VagrantRunners";

/** canWrite false (a viewer) hides queueing and canceling: vagrant-server would refuse them. */
export function VagrantView({ client, runners, problem, onRetry, canWrite, go }: {
  /** The Vagrant API with this session's token; null while it is being issued. */
  client: Client<typeof Vagrant> | null;
  runners: Client<typeof RunnerService>;
  /** Why no Vagrant token could be issued ("" when none failed). */
  problem: string;
  onRetry: () => void;
  canWrite: boolean;
  go: (p: string) => void;
}) {
  const list = usePoll(async (signal) => allRunners((req, opts) => runners.listRunners(req, opts), runnersShown, signal), 5000, [runners]);
  return (
    <>
      {client ? <Jobs client={client} runners={list.data?.runners ?? []} canWrite={canWrite} go={go} /> : (
        <>
          <h1>Vagrant</h1>
          {problem ? (
            <Panel title="vagrant-server" id="vagrant-connect">
              <ErrorLine text={`vagrant-server gave this session no Vagrant token: ${problem}`} />
              <p><button type="button" onClick={onRetry}>Try again</button></p>
            </Panel>
          ) : <p className="muted" role="status">Connecting to vagrant-server…</p>}
        </>
      )}
      <VagrantRunners list={list} />
    </>
  );
}

function Jobs({ client, runners, canWrite, go }: { client: Client<typeof Vagrant>; runners: Runner[]; canWrite: boolean; go: (p: string) => void }) {
  const jobs = usePoll(async (signal) => sortJobs((await client._ListJobs({}, { signal })).jobs), 3000, [client]);
  const [filter, setFilter] = useState<JobFilter>("all");
  const [oldestFirst, setOldestFirst] = useState(false);
  const shown = filterJobs(jobs.data ?? [], filter, oldestFirst);
  const [selected, setSelected] = useState("");
  const [op, setOp] = useState<QueueableOp>("noop");
  const [chosen, setRunner] = useState("");
  // A runner that left the list is no longer offered, nor kept chosen.
  const runner = keptChoice(chosen, runners);
  const queue = useAction();
  const cancel = useAction();
  const now = Date.now();

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await queue.run(async () => {
      const r = await client.queueJob(newJob(op, runner, "10m"));
      setSelected(r.jobId);
      jobs.reload();
      return `Queued job ${r.jobId}.`;
    });
  };

  return (
    <>
      <div className="page-head">
        <h1>Vagrant</h1>
        <Refreshed at={jobs.at} loading={jobs.loading} onReload={jobs.reload} />
      </div>
      <ErrorLine text={jobs.error} details={jobs.details} />
      {canWrite ? (
        <Panel title="Queue a job" id="queue">
          <form onSubmit={submit} className="row" noValidate>
            <label className="grow">
              Operation
              <select name="operation" value={op} onChange={(e) => setOp(e.target.value as QueueableOp)}>
                {queueableOps.map((o) => <option key={o.op} value={o.op}>{o.label}</option>)}
              </select>
            </label>
            <label className="grow">
              Runner
              <select name="runner" value={runner} onChange={(e) => setRunner(e.target.value)}>
                {runnerChoices(runners).map((c) => <option key={c.value} value={c.value}>{c.label}</option>)}
              </select>
            </label>
            <button type="submit" disabled={queue.busy}>{queue.busy ? "Queueing…" : "Queue job"}</button>
          </form>
          <ErrorLine text={queue.error} details={queue.details} />
          <DoneLine text={queue.done} />
        </Panel>
      ) : <p className="notice" role="status">{readOnlyNotice}</p>}
      {selected && <JobOutput client={client} jobId={selected} onClose={() => setSelected("")} />}
      <Loading loading={jobs.loading} has={jobs.data !== undefined} what="jobs">
        <Panel title="Jobs" id="jobs">
          {jobs.data?.length === 0 ? <p className="muted">{canWrite ? "No jobs yet. Queue one above." : "No jobs yet."}</p> : (<>
            <div className="row">
              <label>
                Show
                <select name="job-filter" value={filter} onChange={(e) => setFilter(e.target.value as JobFilter)}>
                  {jobFilters.map((f) => <option key={f.value} value={f.value}>{f.label}</option>)}
                </select>
              </label>
              <label>
                Order
                <select name="job-order" value={oldestFirst ? "oldest" : "newest"} onChange={(e) => setOldestFirst(e.target.value === "oldest")}>
                  <option value="newest">Newest first</option>
                  <option value="oldest">Oldest first</option>
                </select>
              </label>
              <span className="muted" data-testid="job-count">{shown.length} of {jobs.data?.length ?? 0} jobs</span>
            </div>
            {shown.length === 0 ? (
              <p className="muted">No job is {jobFilters.find((f) => f.value === filter)?.label.toLowerCase()}. <button type="button" className="small" onClick={() => setFilter("all")}>Show all jobs</button></p>
            ) : (
            <TableWrap>
              <table>
                <thead><tr><th scope="col">Job</th><th scope="col">Operation</th><th scope="col">State</th><th scope="col">Queued</th><th scope="col">Runner</th><th scope="col">Actions</th></tr></thead>
                <tbody>
                  {shown.map((j) => {
                    const st = jobState(j.state, isCanceled(j));
                    const err = jobError(j);
                    return (
                      <tr key={j.id} data-job={j.id} aria-selected={j.id === selected}>
                        <td><Id value={j.id} to={objectPath("/vagrant/jobs", j.id)} go={go} /></td>
                        <td>{operationOf(j)}</td>
                        <td><span className={`badge ${st.level}`}>{st.text}</span>{err && <div className="muted small-text">{err}</div>}</td>
                        <td>{ago(timestampMs(j.queueTime), now)}</td>
                        <td>{j.assignedRunner?.id ? <Id value={j.assignedRunner.id} /> : "—"}</td>
                        <td className="actions">
                          <button type="button" className="small" onClick={() => setSelected(j.id)}>Output</button>
                          {canWrite && !isFinished(j.state) && (
                            <button type="button" className="small danger" disabled={cancel.busy} onClick={() => {
                              if (!window.confirm(cancelJobQuestion(j.id, operationOf(j)))) return;
                              void cancel.run(async () => {
                                await client.cancelJob({ jobId: j.id });
                                jobs.reload();
                                return `Cancel requested for job ${j.id}.`;
                              });
                            }}>Cancel</button>
                          )}
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </TableWrap>
            )}
          </>)}
          <ErrorLine text={cancel.error} details={cancel.details} />
          <DoneLine text={cancel.done} />
        </Panel>
        <VagrantRegistry client={client} />
      </Loading>
    </>
  );
}
