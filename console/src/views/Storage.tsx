// Storage overview (stats): health with the checks behind it, radar with its scores, capacity
// with its history, I/O, nodes, crashes, pools and OSDs — refreshed every few seconds.
import { useEffect, useMemo, useState } from "react";
import type { Client } from "@connectrpc/connect";
import type { StatsService } from "../gen/stats/stats_pb";
import type { HistoryService } from "../gen/plinth/stats/v1/history_pb";
import { ClusterSource, type ClusterService } from "../gen/plinth/stats/v1/cluster_pb";
import { usePoll } from "../lib/hooks";
import { ago, timestampMs } from "../lib/format";
import {
  addSample, capacity, capacityPoints, capacityText, health, historySummary, mergeHistory, radarAxes, radarData, radarText, readiness, storedSamples,
  type Sample,
} from "../lib/stats";
import { clusterLine, healthReason } from "../lib/cluster";
import { CapacityChart, RadarChart } from "./charts";
import { Crashes, HealthChecks, PoolsAndOSDs } from "./StorageDetail";
import { ErrorLine, Loading, Panel, Refreshed, TableWrap } from "./ui";

const refreshMs = 5000;
/** Points asked of the stored history: one per unit of the plot's width. */
const historyPoints = 300;
/** This visit's readings kept after the stored history (an hour at refreshMs). */
const liveReadings = 720;

export function Storage({ stats, history: historyApi, cluster }: {
  stats: Client<typeof StatsService>;
  history: Client<typeof HistoryService>;
  cluster: Client<typeof ClusterService>;
}) {
  const overview = usePoll(async (signal) => {
    const [s, n, r] = await Promise.all([
      stats.getClusterStats({}, { signal }),
      stats.getClusterNodes({}, { signal }),
      stats.getClusterRadar({}, { signal }),
    ]);
    return { stats: s.stats, nodes: n.nodes, radar: r.radar };
  }, refreshMs, [stats]);
  // Why the health is what it is, the pools, OSDs and crashes: apart, so that its failure leaves the overview.
  const detail = usePoll(async (signal) => cluster.getClusterDetail({}, { signal }), refreshMs, [cluster]);
  // The history stats recorded (its whole retention), loaded at open; the live refresh extends it.
  const stored = usePoll(async (signal) => historyApi.getCapacityHistory({ maxPoints: historyPoints }, { signal }), 0, [historyApi]);
  const [live, setLive] = useState<Sample[]>([]);
  const usage = overview.data?.stats?.data?.usage;
  useEffect(() => {
    if (usage && overview.at) {
      setLive((h) => addSample(h, { at: overview.at, used: Number(usage.used), total: Number(usage.total) }, liveReadings));
    }
  }, [usage, overview.at]);
  const storedPoints = useMemo(() => storedSamples(stored.data), [stored.data]);
  const history = useMemo(() => mergeHistory(storedPoints, live, historyPoints + liveReadings), [storedPoints, live]);
  const plot = useMemo(() => capacityPoints(history), [history]);
  const cap = useMemo(() => capacity(usage), [usage]);
  const radarScores = overview.data?.radar;
  const radar = useMemo(() => (radarScores ? radarData(radarScores, cap) : undefined), [radarScores, cap]);
  const radarLabel = radarScores ? radarText(radarScores, cap) : "";

  const s = overview.data?.stats;
  // The badge and its reason from the same answer; Koor's summary until the detail arrives.
  const h = health(detail.data?.health || s?.status || "");
  const now = Date.now();
  const noCeph = detail.data?.source === ClusterSource.INVENTORY;
  return (
    <>
      <div className="page-head">
        <h1>Storage</h1>
        <Refreshed at={overview.at} loading={overview.loading} onReload={() => void Promise.all([overview.reload(), detail.reload()])} />
      </div>
      <ErrorLine text={overview.error} details={overview.details} />
      <Loading loading={overview.loading} has={overview.data !== undefined} what="the storage cluster">
        <div className="grid">
          <Panel title="Health" id="health">
            <p className={`badge ${h.level}`} data-testid="health">{h.text}</p>
            {detail.data && <p data-testid="health-reason">{healthReason(detail.data)}</p>}
            <p className="muted" data-testid="cluster-name">{clusterLine(detail.data, s?.id ?? "")}</p>
            <ErrorLine text={detail.error && `The health checks could not be loaded: ${detail.error}`} />
            {radar && (
              <>
                <RadarChart labels={radar.labels} values={radar.values} label={`Radar: ${radarLabel}`} />
                <dl className="facts radar-values" data-testid="radar-values">
                  {radarAxes.map((a, i) => (
                    <div key={a.key} className="fact" title={a.meaning}>
                      <dt>{a.label}</dt>
                      <dd><strong>{radar.values[i]}%</strong> <span className="muted small-text">{a.meaning}</span></dd>
                    </div>
                  ))}
                </dl>
              </>
            )}
          </Panel>
          <Panel title="Capacity" id="capacity">
            <p data-testid="capacity-text">{cap ? <strong>{capacityText(cap)}</strong> : capacityText(cap)}</p>
            {cap && (
              <>
                <p className="muted small-text">Raw capacity: Ceph's (before replication) plus the suite's LVM space. Free is what stats' sources report as available; the radar's Free capacity is the same share.</p>
                <div className="bar" role="meter" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(cap.usedPct)} aria-label="Capacity used">
                  <div style={{ width: `${cap.usedPct}%` }} />
                </div>
              </>
            )}
            {history.length >= 2 ? (
              <CapacityChart points={plot} aria-label="Capacity used over time" aria-describedby="capacity-history"
                data-testid="capacity-plot" data-stored={storedPoints.length} data-first={history[0].at} />
            ) : <p className="muted">The history plot fills in as readings arrive.</p>}
            <p className="muted" id="capacity-history" data-testid="capacity-history">{historySummary(history)}</p>
            {stored.error && <p className="muted">The stored history could not be loaded ({stored.error}); showing this visit's readings.</p>}
            {noCeph ? <p className="muted small-text">Without Ceph there are no pools, objects, OSDs or client I/O to show.</p> : <dl className="facts">
              <dt>Pools</dt><dd>{s?.data?.pools?.pools ?? 0}</dd>
              <dt>Objects</dt><dd>{s?.data?.objects?.objectCount ?? 0} ({s?.data?.objects?.size || "0"})</dd>
              <dt>OSDs up/in</dt><dd>{s?.services?.osd?.osdUp ?? 0} / {s?.services?.osd?.osdIn ?? 0} of {s?.services?.osd?.osdCount ?? 0}</dd>
              <dt>Client read / write</dt><dd>{s?.iops?.clientRead || "0"} / {s?.iops?.clientWrite || "0"}</dd>
            </dl>}
          </Panel>
        </div>
        {detail.data && <HealthChecks detail={detail.data} />}
        <Panel title="Nodes" id="nodes">
          {overview.data && overview.data.nodes.length === 0 ? <p className="muted">No nodes reported.</p> : (
            <TableWrap>
              <table>
                <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Roles</th><th scope="col">Address</th><th scope="col">Age</th></tr></thead>
                <tbody>
                  {overview.data?.nodes.map((n) => {
                    const r = readiness(n.status);
                    return (
                      <tr key={n.name}>
                        <td>{n.name}</td>
                        <td><span className={`badge ${r.level}`}>{r.text}</span></td>
                        <td>{n.roles.join(", ") || "—"}</td>
                        <td>{n.internalIp || n.externalIp || "—"}</td>
                        <td>{ago(timestampMs(n.age), now)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </TableWrap>
          )}
        </Panel>
        {detail.data && <Crashes detail={detail.data} now={now} />}
        {detail.data && <PoolsAndOSDs detail={detail.data} />}
      </Loading>
    </>
  );
}
