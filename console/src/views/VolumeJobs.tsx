// The Volumes page's backups and restores (lvmd-agent's plinth.lvmd.v1.JobService): newest
// first, each with its progress; refreshed every 2 s while one runs, else every 15 s. On a
// volume's page, only that volume's (read from the newest maxJobPage jobs). An operator
// restores a complete backup into a new volume, deletes a backup (typing its name), and
// dismisses a failed row; a viewer sees none of these controls.
import { useEffect, useRef, useState } from "react";
import type { Client } from "@connectrpc/connect";
import type { VGService } from "../gen/lvmd/lvmd_pb";
import { JobKind, JobState, type Job, type JobService } from "../gen/plinth/lvmd/v1/jobs_pb";
import { useAction, usePoll } from "../lib/hooks";
import { timestampMs, when } from "../lib/format";
import { anyRunning, idleRefreshMs, jobDuration, jobKind, jobPageStep, jobProgress, jobState, maxJobPage, runningRefreshMs } from "../lib/jobs";
import { storeMessage } from "../lib/storeWords";
import { DoneLine, ErrorLine, Panel, Refreshed, TableWrap } from "./ui";
import { JobAction } from "./VolumeJobAction";

// onFinished is called when the running jobs have all ended: a volume's page reads the volume
// again then, so the hold of a finished backup is not still shown beside its Complete row.
// onChanged is called when an action here changed the volumes (a restore made one).
export function VolumeJobs({ jobs, vg, volume, canWrite, onFinished, onChanged }: {
  jobs: Client<typeof JobService>; vg: Client<typeof VGService>; volume?: string; canWrite: boolean; onFinished?: () => void; onChanged?: () => void;
}) {
  const [action, setAction] = useState<{ kind: "restore" | "delete"; job: Job } | null>(null);
  const dismiss = useAction();
  const [limit, setLimit] = useState(volume ? maxJobPage : jobPageStep);
  const [fast, setFast] = useState(false);
  const list = usePoll(async (signal) => jobs.listJobs({ pageSize: limit }, { signal }), fast ? runningRefreshMs : idleRefreshMs, [jobs, limit]);
  const wasRunning = useRef(false);
  useEffect(() => {
    const running = anyRunning(list.data?.jobs);
    if (wasRunning.current && !running) onFinished?.();
    wasRunning.current = running;
    setFast(running);
  }, [list.data]);
  const now = Date.now();
  const rows = volume ? list.data?.jobs.filter((j) => j.volumeHandle === volume) : list.data?.jobs;
  return (
    <Panel title={volume ? `Backups and restores of ${volume}` : "Backups and restores"} id="volume-jobs" actions={<Refreshed at={list.at} loading={list.loading} onReload={list.reload} />}>
      <ErrorLine text={list.error} details={list.details} />
      {rows === undefined ? (list.loading && <p className="muted" role="status">Loading jobs…</p>) : rows.length === 0 ? (
        <p className="muted">{volume ? "No backup or restore of this volume yet." : "No backups or restores on this node yet."} TopoLVM starts them (CreateBackup, or CreateLV from a backup){volume ? ", and so does Back up above" : ""}.</p>
      ) : (
        <TableWrap>
          <table>
            <thead><tr>
              <th scope="col">Kind</th><th scope="col">Name</th><th scope="col">Volume</th><th scope="col">State</th>
              <th scope="col">Progress</th><th scope="col">Started</th><th scope="col">Took</th><th scope="col">Location</th>
              {canWrite && <th scope="col">Actions</th>}
            </tr></thead>
            <tbody>
              {rows.map((j) => {
                const st = jobState(j);
                const p = jobProgress(j);
                const label = `${jobKind(j.kind)} ${j.name} progress`;
                return (
                  <tr key={j.id.toString()} data-job={j.name}>
                    <td>{jobKind(j.kind)}{j.encrypted && <div className="muted small-text">encrypted</div>}</td>
                    <td>{j.name}</td>
                    <td>{j.volumeHandle}<div className="muted small-text">{j.deviceClass}</div></td>
                    <td><span className={`badge ${st.level}`}>{st.text}</span>{j.message && <JobMessage message={j.message} />}</td>
                    <td>
                      <div className="bar" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100}
                        aria-valuenow={p.percent} aria-valuetext={p.text}>
                        <div style={{ width: `${p.percent}%` }} />
                      </div>
                      <span className="small-text">{p.text}</span>
                    </td>
                    <td>{when(timestampMs(j.startTime))}{j.attempts > 1 && <div className="muted small-text">attempt {j.attempts}</div>}</td>
                    <td>{jobDuration(j, now)}</td>
                    <td className="small-text">{j.location}{j.kind === JobKind.BACKUP && j.defaultStore && <div className="muted">this agent's store</div>}</td>
                    {canWrite && <td className="actions">
                      {j.kind === JobKind.BACKUP && j.state === JobState.COMPLETE && <>
                        <button type="button" className="small" onClick={() => setAction({ kind: "restore", job: j })}>Restore…</button>
                        <button type="button" className="small danger" onClick={() => setAction({ kind: "delete", job: j })}>Delete…</button>
                      </>}
                      {j.state === JobState.ERROR && <>
                        {j.kind === JobKind.BACKUP && <button type="button" className="small danger" onClick={() => setAction({ kind: "delete", job: j })}>Delete…</button>}
                        <button type="button" className="small" disabled={dismiss.busy} onClick={() => void dismiss.run(async () => {
                          await jobs.dismissJob({ id: j.id });
                          await list.reload();
                          return `Dismissed the failed ${jobKind(j.kind).toLowerCase()} ${j.name}.`;
                        })}>Dismiss</button>
                      </>}
                    </td>}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </TableWrap>
      )}
      <ErrorLine text={dismiss.error} details={dismiss.details} />
      <DoneLine text={dismiss.done} />
      {canWrite && action && <JobAction key={`${action.kind}-${action.job.id}`} kind={action.kind} job={action.job} jobs={jobs} vg={vg}
        onClose={() => setAction(null)} onDone={async () => { onChanged?.(); await list.reload(); }} />}
      {!volume && list.data?.nextPageToken && limit < maxJobPage && (
        <button type="button" className="small" onClick={() => setLimit((l) => Math.min(maxJobPage, l + jobPageStep))}>Show older jobs</button>
      )}
    </Panel>
  );
}

/** A job's message in words, with the agent's own text behind a disclosure when they differ. */
function JobMessage({ message }: { message: string }) {
  const m = storeMessage(message);
  return (
    <div className="muted small-text job-message">
      {m.text}
      {m.details && <details><summary>Details</summary><pre className="raw">{m.details}</pre></details>}
    </div>
  );
}
