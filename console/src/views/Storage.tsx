// Storage overview (stats): health, radar, capacity with its history, I/O, nodes, crashes —
// refreshed every few seconds.
import { useEffect, useMemo, useState } from "react";
import type { Client } from "@connectrpc/connect";
import type { StatsService } from "../gen/stats/stats_pb";
import type { HistoryService } from "../gen/plinth/stats/v1/history_pb";
import { usePoll } from "../lib/hooks";
import { ago, formatBytes, percent, timestampMs } from "../lib/format";
import {
  addSample, capacityPoints, health, historySummary, mergeHistory, radarData, radarText, readiness, storedSamples, type Sample,
} from "../lib/stats";
import { CapacityChart, RadarChart } from "./charts";
import { ErrorLine, Loading, Panel, Refreshed } from "./ui";

const refreshMs = 5000;
/** Points asked of the stored history: one per unit of the plot's width. */
const historyPoints = 300;
/** This visit's readings kept after the stored history (an hour at refreshMs). */
const liveReadings = 720;

export function Storage({ stats, history: historyApi }: { stats: Client<typeof StatsService>; history: Client<typeof HistoryService> }) {
  const overview = usePoll(async (signal) => {
    const [s, n, r] = await Promise.all([
      stats.getClusterStats({}, { signal }),
      stats.getClusterNodes({}, { signal }),
      stats.getClusterRadar({}, { signal }),
    ]);
    return { stats: s.stats, nodes: n.nodes, radar: r.radar };
  }, refreshMs, [stats]);
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
  const radarScores = overview.data?.radar;
  const radar = useMemo(() => (radarScores ? radarData(radarScores) : undefined), [radarScores]);
  const radarLabel = radarScores ? radarText(radarScores) : "";

  const s = overview.data?.stats;
  const h = health(s?.status ?? "");
  const now = Date.now();
  return (
    <>
      <div className="page-head">
        <h1>Storage</h1>
        <Refreshed at={overview.at} loading={overview.loading} onReload={overview.reload} />
      </div>
      <ErrorLine text={overview.error} details={overview.details} />
      <Loading loading={overview.loading} has={overview.data !== undefined} what="the storage cluster">
        <div className="grid">
          <Panel title="Health" id="health">
            <p className={`badge ${h.level}`} data-testid="health">{h.text}</p>
            <p className="muted">Cluster {s?.id || "—"}</p>
            {radar && <RadarChart labels={radar.labels} values={radar.values} label={`Radar: ${radarLabel}`} />}
          </Panel>
          <Panel title="Capacity" id="capacity">
            {usage && Number(usage.total) > 0 ? (
              <>
                <p><strong>{formatBytes(usage.used)}</strong> used of {formatBytes(usage.total)} ({percent(usage.used, usage.total).toFixed(1)}%), {formatBytes(usage.available)} available</p>
                <div className="bar" role="meter" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(percent(usage.used, usage.total))} aria-label="Capacity used">
                  <div style={{ width: `${percent(usage.used, usage.total)}%` }} />
                </div>
                {history.length >= 2 ? (
                  <CapacityChart points={plot} aria-label="Capacity used over time" aria-describedby="capacity-history"
                    data-testid="capacity-plot" data-stored={storedPoints.length} data-first={history[0].at} />
                ) : <p className="muted">The history plot fills in as readings arrive.</p>}
                <p className="muted" id="capacity-history" data-testid="capacity-history">{historySummary(history)}</p>
                {stored.error && <p className="muted">The stored history could not be loaded ({stored.error}); showing this visit's readings.</p>}
              </>
            ) : <p className="muted">No capacity reported yet.</p>}
            <dl className="facts">
              <dt>Pools</dt><dd>{s?.data?.pools?.pools ?? 0}</dd>
              <dt>Objects</dt><dd>{s?.data?.objects?.objectCount ?? 0} ({s?.data?.objects?.size || "0"})</dd>
              <dt>OSDs up/in</dt><dd>{s?.services?.osd?.osdUp ?? 0} / {s?.services?.osd?.osdIn ?? 0} of {s?.services?.osd?.osdCount ?? 0}</dd>
              <dt>Client read / write</dt><dd>{s?.iops?.clientRead || "0"} / {s?.iops?.clientWrite || "0"}</dd>
            </dl>
          </Panel>
        </div>
        <Panel title="Nodes" id="nodes">
          {overview.data && overview.data.nodes.length === 0 ? <p className="muted">No nodes reported.</p> : (
            <div className="table-wrap">
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
            </div>
          )}
        </Panel>
        <Panel title="Crashes" id="crashes">
          {(s?.crashes.length ?? 0) === 0 ? <p className="muted">No recent crashes.</p> : (
            <ul>{s!.crashes.map((c, i) => <li key={i}>{c.description}</li>)}</ul>
          )}
        </Panel>
      </Loading>
    </>
  );
}
