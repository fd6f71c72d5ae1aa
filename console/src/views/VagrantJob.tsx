// One Vagrant job's own page (/vagrant/jobs/<id>): what it is, where it ran, how it ended,
// and its output streamed live. Linked from a cluster's machines (their provisioning job).
import type { ReactNode } from "react";
import { Code, type Client } from "@connectrpc/connect";
import type { Vagrant } from "../gen/hashicorp/vagrant/server_pb";
import { timestampMs, when } from "../lib/format";
import { usePoll } from "../lib/hooks";
import { isCanceled, jobError, jobState, operationOf } from "../lib/vagrant";
import { JobOutput } from "./JobOutput";
import { ErrorLine, Id, Link, Loading, NotFound, Panel, Refreshed } from "./ui";

/** client is null until vagrant-server issued the session's token; problem says why it did not. */
export function VagrantJob({ client, jobId, go, problem }: { client: Client<typeof Vagrant> | null; jobId: string; go: (p: string) => void; problem: string }) {
  const back: ReactNode = <Link to="/vagrant" go={go}>All jobs</Link>;
  if (!client) {
    return (
      <>
        <p className="crumbs">{back}</p>
        <div className="page-head"><h1>Job {jobId}</h1></div>
        {problem ? <ErrorLine text={`vagrant-server gave this session no token: ${problem}`} /> : <p className="muted" role="status">Loading the job…</p>}
      </>
    );
  }
  return <JobPage client={client} jobId={jobId} back={back} go={go} />;
}

function JobPage({ client, jobId, back, go }: { client: Client<typeof Vagrant>; jobId: string; back: ReactNode; go: (p: string) => void }) {
  const job = usePoll((signal) => client.getJob({ jobId }, { signal }), 3000, [client, jobId]);
  if (job.code === Code.NotFound) {
    return <NotFound title="Job not found" back={back}>vagrant-server has no job <code>{jobId}</code> (jobs are kept for a while after they end).</NotFound>;
  }
  const j = job.data;
  const st = j ? jobState(j.state, isCanceled(j)) : undefined;
  const err = j ? jobError(j) : "";
  return (
    <>
      <p className="crumbs">{back}</p>
      <div className="page-head">
        <h1>Job <Id value={jobId} /></h1>
        <Refreshed at={job.at} loading={job.loading} onReload={job.reload} />
      </div>
      <ErrorLine text={job.error} details={job.details} />
      <Loading loading={job.loading} has={j !== undefined} what="the job">
        {j && st && (
          <Panel title="Job" id="job-facts">
            <dl className="facts">
              <dt>Operation</dt><dd>{operationOf(j)}</dd>
              <dt>State</dt><dd><span className={`badge ${st.level}`}>{st.text}</span>{err && <span className="muted"> {err}</span>}</dd>
              <dt>Runner</dt><dd>{j.assignedRunner?.id ? <Id value={j.assignedRunner.id} /> : "not assigned yet"}</dd>
              <dt>Queued</dt><dd>{when(timestampMs(j.queueTime))}</dd>
              {j.completeTime && <><dt>Ended</dt><dd>{when(timestampMs(j.completeTime))}</dd></>}
            </dl>
          </Panel>
        )}
      </Loading>
      <JobOutput client={client} jobId={jobId} onClose={() => go("/vagrant")} />
    </>
  );
}
