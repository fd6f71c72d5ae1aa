// The Volumes page's backups and restores (lvmd-agent's plinth.lvmd.v1.JobService): newest
// first, each with its progress; refreshed every 2 s while one runs, else every 15 s. On a
// volume's page, only that volume's (read from the newest maxJobPage jobs).
import { useEffect, useRef, useState } from "react";
import type { Client } from "@connectrpc/connect";
import type { JobService } from "../gen/plinth/lvmd/v1/jobs_pb";
import { usePoll } from "../lib/hooks";
import { timestampMs, when } from "../lib/format";
import { anyRunning, idleRefreshMs, jobDuration, jobKind, jobPageStep, jobProgress, jobState, maxJobPage, runningRefreshMs } from "../lib/jobs";
import { ErrorLine, Panel, Refreshed, TableWrap } from "./ui";

// onFinished is called when the running jobs have all ended: a volume's page reads the volume
// again then, so the hold of a finished backup is not still shown beside its Complete row.
export function VolumeJobs({ jobs, volume, onFinished }: { jobs: Client<typeof JobService>; volume?: string; onFinished?: () => void }) {
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
                    <td><span className={`badge ${st.level}`}>{st.text}</span>{j.message && <div className="muted small-text">{j.message}</div>}</td>
                    <td>
                      <div className="bar" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100}
                        aria-valuenow={p.percent} aria-valuetext={p.text}>
                        <div style={{ width: `${p.percent}%` }} />
                      </div>
                      <span className="small-text">{p.text}</span>
                    </td>
                    <td>{when(timestampMs(j.startTime))}{j.attempts > 1 && <div className="muted small-text">attempt {j.attempts}</div>}</td>
                    <td>{jobDuration(j, now)}</td>
                    <td className="small-text">{j.location}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </TableWrap>
      )}
      {!volume && list.data?.nextPageToken && limit < maxJobPage && (
        <button type="button" className="small" onClick={() => setLimit((l) => Math.min(maxJobPage, l + jobPageStep))}>Show older jobs</button>
      )}
    </Panel>
  );
}
