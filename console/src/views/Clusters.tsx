// Clusters (kaas): the list with each cluster's state in one sentence, the create form filled
// with kaas's own choices (plinth.kaas.v1 GetCatalog), and a page per cluster
// (/clusters/<name>): cause and next step, timeline, pools, machines with their node and
// provisioning job, the actions its state allows, and its kubeconfig.
import { useState, type FormEvent } from "react";
import { Code, type Client } from "@connectrpc/connect";
import { ClusterStatus, type Cluster, type ClusterItem } from "../gen/cnct/kaas/api/api_pb";
import type { ClusterInfoService, GetCatalogResponse } from "../gen/plinth/kaas/v1/clusters_pb";
import { usePoll, useAction } from "../lib/hooks";
import { allowedActions, clusterStatus, clusterSummary, createProblem, createRequest, machineRows, scalablePools, scaleProblem, scaleRequest, scaleToZeroQuestion, zeroWorkersNote, type CreateForm } from "../lib/kaas";
import { readOnlyNotice } from "../lib/roles";
import { objectPath } from "../lib/routes";
import { timestampMs, when } from "../lib/format";
import { DoneLine, ErrorLine, Explained, Id, Link, Loading, NotFound, Panel, Refreshed, TableWrap } from "./ui";

type KaasClient = Client<typeof Cluster>;
type InfoClient = Client<typeof ClusterInfoService>;

/** Failures (and retries) have a cause from kaas; the list asks for it only for those. */
function needsCause(c: ClusterItem): boolean {
  return c.status === ClusterStatus.ERROR || c.status === ClusterStatus.DEGRADED || c.statusMessage.includes("retrying");
}

/** canWrite false (a viewer) hides create, delete, scale and upgrade: kaas would refuse them. */
export function Clusters({ kaas, info, canWrite, name, go }: { kaas: KaasClient; info: InfoClient; canWrite: boolean; name: string; go: (p: string) => void }) {
  if (name) return <ClusterPage kaas={kaas} info={info} name={name} canWrite={canWrite} go={go} />;
  return <ClusterList kaas={kaas} info={info} canWrite={canWrite} go={go} />;
}

function ClusterList({ kaas, info, canWrite, go }: { kaas: KaasClient; info: InfoClient; canWrite: boolean; go: (p: string) => void }) {
  const list = usePoll(async (signal) => {
    const clusters = (await kaas.getClusterList({}, { signal })).clusters;
    const causes = await Promise.all(clusters.map((c) => needsCause(c)
      ? info.getClusterInfo({ name: c.name }, { signal }).then((r) => r.cluster?.cause, () => undefined)
      : Promise.resolve(undefined)));
    return clusters.map((c, i) => ({ cluster: c, cause: causes[i] }));
  }, 5000, [kaas, info]);
  const catalog = usePoll((signal) => info.getCatalog({}, { signal }), 0, [info]);
  return (
    <>
      <div className="page-head">
        <h1>Clusters</h1>
        <Refreshed at={list.at} loading={list.loading} onReload={list.reload} />
      </div>
      <ErrorLine text={list.error} details={list.details} />
      {canWrite ? <CreateCluster kaas={kaas} catalog={catalog.data} catalogError={catalog.error} onCreated={(n) => go(objectPath("/clusters", n))} />
        : <p className="notice" role="status">{readOnlyNotice}</p>}
      <Loading loading={list.loading} has={list.data !== undefined} what="clusters">
        <Panel title="Clusters" id="clusters">
          {list.data?.length === 0 ? <p className="muted">{canWrite ? "No clusters yet. Create one above." : "No clusters yet."}</p> : (
            <TableWrap>
              <table>
                <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">State</th></tr></thead>
                <tbody>
                  {list.data?.map(({ cluster: c, cause }) => {
                    const st = clusterStatus(c.status);
                    return (
                      <tr key={c.name} data-cluster={c.name}>
                        <td><Link to={objectPath("/clusters", c.name)} go={go}>{c.name}</Link></td>
                        <td><span className={`badge ${st.level}`}>{st.text}</span></td>
                        <td><Explained summary={clusterSummary(c.statusMessage, cause)} /></td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </TableWrap>
          )}
        </Panel>
      </Loading>
    </>
  );
}

function CreateCluster({ kaas, catalog, catalogError, onCreated }: { kaas: KaasClient; catalog?: GetCatalogResponse; catalogError: string; onCreated: (name: string) => void }) {
  const [f, setF] = useState<CreateForm>({ name: "", version: "", controlPlane: 1, poolName: "workers", poolCount: 1, instanceType: "" });
  const [problem, setProblem] = useState("");
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const p = createProblem(f, catalog);
    setProblem(p);
    if (p) return;
    await act.run(async () => {
      const r = await kaas.createCluster(createRequest(f));
      // The cluster's own page follows it from here (no success line left behind on this one).
      onCreated(r.cluster?.name ?? f.name);
    });
  };
  const sizes = catalog?.controlPlaneSizes.length ? catalog.controlPlaneSizes : [1, 3, 5];
  return (
    <Panel title="Create a cluster" id="create-cluster">
      <form onSubmit={submit} className="row wrap" noValidate>
        <label>Name<input name="cluster-name" value={f.name} onChange={(e) => setF({ ...f, name: e.target.value })} required /></label>
        <label>Kubernetes version
          <select name="version" value={f.version} onChange={(e) => setF({ ...f, version: e.target.value })}>
            <option value="">{catalog ? `Default (${catalog.defaultVersion})` : "Default"}</option>
            {catalog?.versions.map((v) => <option key={v} value={v}>{v}</option>)}
          </select>
        </label>
        <label>Control plane
          <select name="control-plane" value={f.controlPlane} onChange={(e) => setF({ ...f, controlPlane: Number(e.target.value) })}>
            {sizes.map((n) => <option key={n} value={n}>{n} machine{n === 1 ? "" : "s"}</option>)}
          </select>
        </label>
        <label>Worker pool<input name="pool-name" value={f.poolName} onChange={(e) => setF({ ...f, poolName: e.target.value })} /></label>
        <label>Instance type
          <select name="instance-type" value={f.instanceType} onChange={(e) => setF({ ...f, instanceType: e.target.value })}>
            <option value="">{catalog?.instanceTypes.length ? `Default (${catalog.instanceTypes[0]})` : "Default"}</option>
            {catalog?.instanceTypes.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </label>
        <label>Workers<input name="pool-count" type="number" min={0} max={catalog?.maxPoolSize || undefined} value={f.poolCount} onChange={(e) => setF({ ...f, poolCount: Number(e.target.value) })} /></label>
        <button type="submit" disabled={act.busy}>{act.busy ? "Creating…" : "Create"}</button>
      </form>
      {f.poolCount === 0 && <p className="notice" role="status" data-testid="zero-workers">{zeroWorkersNote}</p>}
      {catalogError && <p className="muted">kaas's choices could not be read ({catalogError}); the defaults apply.</p>}
      <ErrorLine text={problem || act.error} details={problem ? "" : act.details} />
    </Panel>
  );
}

function ClusterPage({ kaas, info, name, canWrite, go }: { kaas: KaasClient; info: InfoClient; name: string; canWrite: boolean; go: (p: string) => void }) {
  const detail = usePoll(async (signal) => {
    const [i, nodes, up, kc] = await Promise.all([
      info.getClusterInfo({ name }, { signal }),
      kaas.getClusterNodesStatus({ clusterName: name }, { signal }).catch(() => undefined),
      kaas.getUpgradeClusterInformation({ name }, { signal }).catch(() => undefined),
      kaas.getCluster({ name }, { signal }).catch(() => undefined),
    ]);
    return { info: i.cluster!, live: nodes?.machines, versions: up?.versions ?? [], kubeconfig: kc?.cluster?.kubeconfig ?? "" };
    // A cluster kaas does not know (deleted, or never there) is not asked for again: Refresh does.
  }, 5000, [kaas, info, name], { stopOn: [Code.NotFound] });
  const catalog = usePoll((signal) => info.getCatalog({}, { signal }), 0, [info]);
  const [pool, setPool] = useState("");
  const [count, setCount] = useState(1);
  const [version, setVersion] = useState("");
  const [scaleProb, setScaleProblem] = useState("");
  const scale = useAction();
  const upgrade = useAction();
  const del = useAction();
  const back = <Link to="/clusters" go={go}>All clusters</Link>;

  if (detail.code === Code.NotFound && !del.done) {
    return <NotFound title="Cluster not found" back={back}>There is no cluster named <code>{name}</code> (it may have been deleted).</NotFound>;
  }
  const c = detail.data?.info;
  const gone = detail.code === Code.NotFound;
  const allowed = c ? allowedActions(c) : undefined;
  const pools = c ? scalablePools(c) : [];
  const chosenPool = pool || pools[0] || "";
  const st = c ? clusterStatus(c.status) : undefined;
  const rows = c ? machineRows(c.machines, detail.data?.live) : [];

  const doScale = (e: FormEvent) => {
    e.preventDefault();
    const p = scaleProblem(chosenPool, count, catalog.data?.maxPoolSize ?? 0);
    setScaleProblem(p);
    if (p) return;
    const q = scaleToZeroQuestion(name, chosenPool, count);
    if (q && !window.confirm(q)) return;
    void scale.run(async () => {
      await kaas.scaleNodePool(scaleRequest(name, chosenPool, count));
      await detail.reload();
      return `Scaling ${chosenPool} of ${name} to ${count}.`;
    });
  };
  const doUpgrade = (e: FormEvent) => {
    e.preventDefault();
    void upgrade.run(async () => {
      await kaas.upgradeCluster({ name, version });
      await detail.reload();
      return `Upgrading ${name} to ${version}.`;
    });
  };
  const doDelete = () => {
    if (!window.confirm(`Delete cluster ${name}? Its machines are released and its kubeconfig stops working.`)) return;
    void del.run(async () => {
      const r = await kaas.deleteCluster({ name });
      await detail.reload();
      return `Deleting ${name}${r.status ? `: ${r.status}` : "."}`;
    });
  };

  return (
    <>
      <p className="crumbs">{back}</p>
      <div className="page-head">
        <h1>Cluster {name}</h1>
        <Refreshed at={detail.at} loading={detail.loading} onReload={detail.reload} />
      </div>
      {!gone && <ErrorLine text={detail.error} details={detail.details} />}
      {gone && <p role="status">Cluster {name} is gone: every machine was released. {back}</p>}
      <Loading loading={detail.loading} has={c !== undefined} what="the cluster">
        {c && st && allowed && <>
          <Panel title="State" id="cluster-state">
            <p><span className={`badge ${st.level}`} data-testid="cluster-status">{st.text}</span></p>
            <Explained summary={clusterSummary(c.statusMessage, c.cause)} />
            <dl className="facts">
              <dt>Kubernetes</dt><dd>{c.version}{c.targetVersion !== c.version && ` → ${c.targetVersion} (upgrading)`}</dd>
              <dt>Machines from</dt><dd>{c.provider}</dd>
              <dt>Created</dt><dd>{when(timestampMs(c.createTime))}</dd>
            </dl>
          </Panel>

          <Panel title="Machines" id="cluster-machines">
            {rows.length === 0 ? <p className="muted">No machines yet.</p> : (
              <TableWrap>
                <table>
                  <thead><tr><th scope="col">Machine</th><th scope="col">Pool</th><th scope="col">State</th><th scope="col">Node</th><th scope="col">Version</th><th scope="col">Address</th><th scope="col">Provisioning</th></tr></thead>
                  <tbody>
                    {rows.map(({ machine: m, node, kubelet }) => (
                      <tr key={m.name} data-machine={m.name}>
                        <td>{m.name}</td>
                        <td>{m.pool}</td>
                        <td>
                          <span className={`badge ${m.state === "ready" ? "ok" : m.state === "failed" ? "err" : "warn"}`}>{m.releasing && m.state !== "failed" ? "releasing" : m.state}</span>
                          {m.providerStatus && <span className="muted small-text"> {m.providerStatus}</span>}
                          {m.message && <details><summary>Details</summary><pre className="raw">{m.message}</pre></details>}
                        </td>
                        <td>{node}</td>
                        <td>{kubelet || m.version}</td>
                        <td>{m.addresses.join(", ") || "—"}</td>
                        <td>{m.vagrantJobId ? <><Link to={`/vagrant/jobs/${encodeURIComponent(m.vagrantJobId)}`} go={go}>Job output</Link> <Id value={m.vagrantJobId} /></> : <span className="muted">—</span>}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
            )}
          </Panel>

          <Panel title="Pools" id="cluster-pools">
            <TableWrap>
              <table>
                <thead><tr><th scope="col">Pool</th><th scope="col">Role</th><th scope="col">Instance type</th><th scope="col">Machines wanted</th><th scope="col">Labels</th></tr></thead>
                <tbody>
                  {c.pools.map((p) => (
                    <tr key={p.name} data-pool={p.name}>
                      <td>{p.name}{p.deleting && <span className="muted"> (being deleted)</span>}</td>
                      <td>{p.role}</td><td>{p.instanceType}</td><td>{p.count}</td><td className="small-text">{p.labels.join(", ") || "—"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          </Panel>

          {canWrite && (
            <Panel title="Change" id="cluster-actions">
              <h3>Scale a pool</h3>
              {allowed.scale ? <p className="muted">{allowed.scale}</p> : pools.length === 0 ? <p className="muted">The cluster has no worker pool to scale.</p> : (
                <form onSubmit={doScale} className="row wrap" noValidate>
                  <label>Pool
                    <select name="scale-pool" value={chosenPool} onChange={(e) => setPool(e.target.value)}>
                      {pools.map((p) => <option key={p} value={p}>{p}</option>)}
                    </select>
                  </label>
                  <label>Machines<input name="scale-count" type="number" min={0} max={catalog.data?.maxPoolSize || undefined} value={count} onChange={(e) => setCount(Number(e.target.value))} /></label>
                  <button type="submit" disabled={scale.busy}>Scale</button>
                </form>
              )}
              <ErrorLine text={scaleProb || scale.error} details={scaleProb ? "" : scale.details} />
              <DoneLine text={scale.done} />
              <h3>Upgrade</h3>
              {allowed.upgrade ? <p className="muted">{allowed.upgrade}</p> : detail.data?.versions.length ? (
                <form onSubmit={doUpgrade} className="row wrap" noValidate>
                  <label>Version
                    <select name="upgrade-version" value={version} onChange={(e) => setVersion(e.target.value)}>
                      <option value="">Choose…</option>
                      {detail.data.versions.map((v) => <option key={v} value={v}>{v}</option>)}
                    </select>
                  </label>
                  <button type="submit" disabled={upgrade.busy || !version}>Upgrade</button>
                </form>
              ) : <p className="muted">No newer version is offered for {c.version}.</p>}
              <ErrorLine text={upgrade.error} details={upgrade.details} />
              <DoneLine text={upgrade.done} />
              <h3>Delete</h3>
              <p>
                <button type="button" className="danger" disabled={del.busy || allowed.delete !== ""} onClick={doDelete}>Delete cluster</button>
                {allowed.delete && <span className="muted"> {allowed.delete}</span>}
              </p>
              <ErrorLine text={del.error} details={del.details} />
              <DoneLine text={del.done} />
            </Panel>
          )}

          <Panel title="Timeline" id="cluster-timeline">
            {c.timeline.length === 0 ? <p className="muted">No status change recorded yet.</p> : (
              <ol className="timeline">
                {[...c.timeline].reverse().map((s, i) => {
                  const ts = clusterStatus(s.status);
                  return (
                    <li key={i}>
                      <time dateTime={new Date(timestampMs(s.time)).toISOString()}>{when(timestampMs(s.time))}</time>{" "}
                      <span className={`badge ${ts.level}`}>{ts.text}</span>{" "}
                      {clusterSummary(s.message).text}
                      {s.actorUsername && <span className="muted"> — by {s.actorUsername}</span>}
                    </li>
                  );
                })}
              </ol>
            )}
          </Panel>

          <Panel title="Kubeconfig" id="cluster-kubeconfig">
            {detail.data?.kubeconfig ? (
              <a className="button" download={`${name}.kubeconfig`} href={`data:application/yaml;charset=utf-8,${encodeURIComponent(detail.data.kubeconfig)}`}>Download kubeconfig</a>
            ) : <p className="muted">No kubeconfig yet (the control plane is not up).</p>}
          </Panel>
        </>}
      </Loading>
    </>
  );
}
