// Every runner registered with vagrant-server, online or offline, with the job it holds:
// vagrant-server's Plinth RunnerService, called with the Plinth session (the page loads the
// list once for this table and the job form's runner choice).
import type { Runner } from "../gen/plinth/vagrant/v1/runners_pb";
import type { Loaded } from "../lib/hooks";
import { ago, timestampMs } from "../lib/format";
import { runnerComponents, runnerJob, runnerState, runnersShown, sortRunners } from "../lib/runners";
import { ErrorLine, Panel, Id, TableWrap } from "./ui";

export function VagrantRunners({ list }: { list: Loaded<{ runners: Runner[]; more: boolean }> }) {
  const now = Date.now();
  const runners = sortRunners(list.data?.runners ?? []);
  const online = runners.filter((r) => r.online).length;
  return (
    <Panel title="Runners" id="runners">
      <ErrorLine text={list.error} details={list.details} />
      {list.data === undefined ? (list.loading && <p className="muted" role="status">Loading the runners…</p>) :
        runners.length === 0 ? <p className="muted">No runner has registered yet.</p> : (
          <>
            <p className="muted">{online} of {runners.length} online{list.data.more ? ` (the first ${runnersShown} by id)` : ""}.</p>
            <TableWrap>
              <table>
                <thead><tr><th scope="col">Runner</th><th scope="col">State</th><th scope="col">Takes</th><th scope="col">Current job</th><th scope="col">Registered</th></tr></thead>
                <tbody>
                  {runners.map((r) => {
                    const st = runnerState(r, now);
                    return (
                      <tr key={r.id} data-runner={r.id}>
                        <td><Id value={r.id} /></td>
                        <td><span className={`badge ${st.level}`}>{st.text}</span></td>
                        <td>{runnerComponents(r)}</td>
                        <td>{runnerJob(r) || "—"}</td>
                        <td>{ago(timestampMs(r.firstSeen), now)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </TableWrap>
          </>
        )}
    </Panel>
  );
}
