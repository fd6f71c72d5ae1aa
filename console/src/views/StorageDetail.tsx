// The Storage page's detail panels (stats' plinth.stats.v1.ClusterService): the health checks
// behind the health, the recent crashes, the pools and the OSDs.
import type { GetClusterDetailResponse } from "../gen/plinth/stats/v1/cluster_pb";
import { ClusterSource } from "../gen/plinth/stats/v1/cluster_pb";
import { checkText, crashText, orderChecks, osdState, poolCopies, poolData, poolPGs, severity } from "../lib/cluster";
import { Panel, TableWrap } from "./ui";

/** The active health checks, worst first, each with its severity, code, summary and details. */
export function HealthChecks({ detail }: { detail: GetClusterDetailResponse }) {
  const checks = orderChecks(detail.checks);
  return (
    <Panel title="Health checks" id="health-checks">
      {checks.length === 0 ? (
        <p className="muted">No health check is active{detail.health === "HEALTH_OK" ? ": the cluster reports HEALTH_OK." : "."}</p>
      ) : (
        <ul className="checks">
          {checks.map((c) => {
            const sev = severity(c.severity);
            return (
              <li key={c.code} data-check={c.code}>
                <span className={`badge ${sev.level}`}>{sev.text}</span> <code>{c.code}</code>{c.muted && <span className="muted"> (muted)</span>}
                <div>{checkText(c)}</div>
                {c.details.length > 0 && (
                  <ul className="muted small-text">{c.details.map((d, i) => <li key={i}>{d}</li>)}</ul>
                )}
              </li>
            );
          })}
        </ul>
      )}
      {detail.source === ClusterSource.CEPH_PROMETHEUS && checks.length > 0 && (
        <p className="muted small-text">The mgr prometheus module gives only the checks' codes; `ceph health detail` says more.</p>
      )}
    </Panel>
  );
}

/** The daemons that crashed recently: daemon, host, how often and when last. */
export function Crashes({ detail, now }: { detail: GetClusterDetailResponse; now: number }) {
  return (
    <Panel title="Crashes" id="crashes">
      {detail.source === ClusterSource.INVENTORY ? (
        <p className="muted">No Ceph cluster is connected, so no daemon reports crashes.</p>
      ) : detail.crashes.length === 0 ? (
        <p className="muted">No recent crash reported. (Ceph's crash module lists a daemon's crashes of the last two weeks until they are archived.)</p>
      ) : (
        <TableWrap>
          <table>
            <thead><tr><th scope="col">Daemon</th><th scope="col">Host</th><th scope="col">Crashes</th></tr></thead>
            <tbody>
              {detail.crashes.map((c) => (
                <tr key={c.daemon} data-daemon={c.daemon}>
                  <td><code>{c.daemon}</code></td>
                  <td>{c.host || "—"}</td>
                  <td>{crashText(c, now)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </Panel>
  );
}

/** The pools and the OSDs, when the source lists them. */
export function PoolsAndOSDs({ detail }: { detail: GetClusterDetailResponse }) {
  if (detail.source === ClusterSource.INVENTORY) return null; // no Ceph: nothing to list
  return (
    <div className="grid">
      <Panel title="Pools" id="pools">
        {detail.pools.length === 0 ? <p className="muted">No pool reported.</p> : (
          <TableWrap>
            <table>
              <thead><tr><th scope="col">Pool</th><th scope="col">Copies</th><th scope="col">Placement groups</th><th scope="col">Data</th></tr></thead>
              <tbody>
                {detail.pools.map((p) => (
                  <tr key={p.name} data-pool={p.name}>
                    <td>{p.name}</td>
                    <td>{poolCopies(p)}</td>
                    <td>{poolPGs(p)}</td>
                    <td>{poolData(p)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      </Panel>
      <Panel title="OSDs" id="osds">
        {detail.osds.length === 0 ? <p className="muted">The source does not list the OSDs (Rook's status gives only counts).</p> : (
          <ul className="osds">
            {detail.osds.map((o) => {
              const st = osdState(o);
              return <li key={o.id} data-osd={o.id}><code>osd.{o.id}</code> <span className={`badge ${st.level}`}>{st.text}</span></li>;
            })}
          </ul>
        )}
      </Panel>
    </div>
  );
}
