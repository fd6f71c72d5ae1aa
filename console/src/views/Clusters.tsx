// Clusters (kaas): list with live status, create, scale a pool, upgrade, delete, the machines
// of a cluster and its kubeconfig.
import { useState, type FormEvent } from "react";
import type { Client } from "@connectrpc/connect";
import type { Cluster } from "../gen/cnct/kaas/api/api_pb";
import { usePoll, useAction } from "../lib/hooks";
import { clusterStatus, controlPlaneSizes, createProblem, createRequest, scaleProblem, scaleRequest, type CreateForm } from "../lib/kaas";
import { readOnlyNotice } from "../lib/roles";
import { DoneLine, ErrorLine, Loading, Panel, Refreshed } from "./ui";

/** canWrite false (a viewer) hides create, delete, scale and upgrade: kaas would refuse them. */
export function Clusters({ kaas, canWrite }: { kaas: Client<typeof Cluster>; canWrite: boolean }) {
  const list = usePoll(async (signal) => (await kaas.getClusterList({}, { signal })).clusters, 5000, [kaas]);
  const [open, setOpen] = useState("");
  const del = useAction();
  return (
    <>
      <div className="page-head">
        <h1>Clusters</h1>
        <Refreshed at={list.at} loading={list.loading} onReload={list.reload} />
      </div>
      <ErrorLine text={list.error} />
      {canWrite ? <CreateCluster kaas={kaas} onCreated={list.reload} /> : <p className="notice" role="status">{readOnlyNotice}</p>}
      <Loading loading={list.loading} has={list.data !== undefined} what="clusters">
        <Panel title="Clusters" id="clusters">
          {list.data?.length === 0 ? <p className="muted">{canWrite ? "No clusters yet. Create one above." : "No clusters yet."}</p> : (
            <div className="table-wrap">
              <table>
                <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Details</th><th scope="col">Actions</th></tr></thead>
                <tbody>
                  {list.data?.map((c) => {
                    const st = clusterStatus(c.status);
                    return (
                      <tr key={c.name} data-cluster={c.name}>
                        <td>{c.name}</td>
                        <td><span className={`badge ${st.level}`}>{st.text}</span></td>
                        <td className="small-text">{c.statusMessage || "—"}</td>
                        <td className="actions">
                          <button type="button" className="small" aria-expanded={open === c.name} onClick={() => setOpen(open === c.name ? "" : c.name)}>Manage</button>
                          {canWrite && <button type="button" className="small danger" disabled={del.busy} onClick={() => {
                            if (!window.confirm(`Delete cluster ${c.name}? Its machines are released.`)) return;
                            void del.run(async () => {
                              const r = await kaas.deleteCluster({ name: c.name });
                              list.reload();
                              return `Deleting ${c.name}${r.status ? `: ${r.status}` : "."}`;
                            });
                          }}>Delete</button>}
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
          <ErrorLine text={del.error} />
          <DoneLine text={del.done} />
        </Panel>
      </Loading>
      {open && <ClusterDetail kaas={kaas} name={open} onChanged={list.reload} canWrite={canWrite} />}
    </>
  );
}

function CreateCluster({ kaas, onCreated }: { kaas: Client<typeof Cluster>; onCreated: () => void }) {
  const [f, setF] = useState<CreateForm>({ name: "", version: "", controlPlane: 1, poolName: "workers", poolCount: 1 });
  const [problem, setProblem] = useState("");
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const p = createProblem(f);
    setProblem(p);
    if (p) return;
    const ok = await act.run(async () => {
      const r = await kaas.createCluster(createRequest(f));
      onCreated();
      return `Creating ${r.cluster?.name ?? f.name}.`;
    });
    if (ok) setF({ ...f, name: "" });
  };
  return (
    <Panel title="Create a cluster" id="create-cluster">
      <form onSubmit={submit} className="row wrap" noValidate>
        <label>Name<input name="cluster-name" value={f.name} onChange={(e) => setF({ ...f, name: e.target.value })} required /></label>
        <label>Kubernetes version<input name="version" placeholder="default" value={f.version} onChange={(e) => setF({ ...f, version: e.target.value })} /></label>
        <label>Control plane
          <select name="control-plane" value={f.controlPlane} onChange={(e) => setF({ ...f, controlPlane: Number(e.target.value) })}>
            {controlPlaneSizes.map((n) => <option key={n} value={n}>{n} machine{n === 1 ? "" : "s"}</option>)}
          </select>
        </label>
        <label>Worker pool<input name="pool-name" value={f.poolName} onChange={(e) => setF({ ...f, poolName: e.target.value })} /></label>
        <label>Workers<input name="pool-count" type="number" min={0} value={f.poolCount} onChange={(e) => setF({ ...f, poolCount: Number(e.target.value) })} /></label>
        <button type="submit" disabled={act.busy}>{act.busy ? "Creating…" : "Create"}</button>
      </form>
      <ErrorLine text={problem || act.error} />
      <DoneLine text={act.done} />
    </Panel>
  );
}

function ClusterDetail({ kaas, name, onChanged, canWrite }: { kaas: Client<typeof Cluster>; name: string; onChanged: () => void; canWrite: boolean }) {
  const detail = usePoll(async (signal) => {
    const [c, nodes, up] = await Promise.all([
      kaas.getCluster({ name }, { signal }),
      kaas.getClusterNodesStatus({ clusterName: name }, { signal }).catch(() => undefined),
      kaas.getUpgradeClusterInformation({ name }, { signal }).catch(() => undefined),
    ]);
    return { cluster: c.cluster, machines: nodes?.machines ?? [], versions: up?.versions ?? [] };
  }, 5000, [kaas, name]);
  const [pool, setPool] = useState("workers");
  const [count, setCount] = useState(1);
  const [version, setVersion] = useState("");
  const scale = useAction();
  const [scaleProb, setScaleProblem] = useState("");
  const upgrade = useAction();
  const kubeconfig = detail.data?.cluster?.kubeconfig ?? "";

  const doScale = (e: FormEvent) => {
    e.preventDefault();
    const p = scaleProblem(pool, count);
    setScaleProblem(p);
    if (p) return;
    void scale.run(async () => {
      await kaas.scaleNodePool(scaleRequest(name, pool, count));
      onChanged();
      detail.reload();
      return `Scaling ${pool} of ${name} to ${count}.`;
    });
  };
  const doUpgrade = (e: FormEvent) => {
    e.preventDefault();
    void upgrade.run(async () => {
      await kaas.upgradeCluster({ name, version });
      onChanged();
      return `Upgrading ${name} to ${version}.`;
    });
  };

  return (
    <Panel title={`Cluster ${name}`} id="cluster-detail">
      <ErrorLine text={detail.error} />
      <Loading loading={detail.loading} has={detail.data !== undefined} what="the cluster">
        <h3>Machines</h3>
        {detail.data?.machines.length === 0 ? <p className="muted">No machines yet.</p> : (
          <div className="table-wrap">
            <table>
              <thead><tr><th scope="col">Host</th><th scope="col">Machine</th><th scope="col">Node</th><th scope="col">Version</th><th scope="col">Address</th></tr></thead>
              <tbody>
                {detail.data?.machines.map((m, i) => (
                  <tr key={m.maasSystemId || i}><td>{m.maasHostname || "—"}</td><td>{m.maasNodeStatus || "—"}</td><td>{m.k8sNodeStatus || "—"}</td><td>{m.k8sVersion || "—"}</td><td>{m.maasIPAddr || "—"}</td></tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {canWrite && <>
        <h3>Scale a pool</h3>
        <form onSubmit={doScale} className="row wrap" noValidate>
          <label>Pool<input name="scale-pool" value={pool} onChange={(e) => setPool(e.target.value)} required /></label>
          <label>Machines<input name="scale-count" type="number" min={0} value={count} onChange={(e) => setCount(Number(e.target.value))} /></label>
          <button type="submit" disabled={scale.busy}>Scale</button>
        </form>
        <ErrorLine text={scaleProb || scale.error} />
        <DoneLine text={scale.done} />
        <h3>Upgrade</h3>
        {detail.data?.versions.length ? (
          <form onSubmit={doUpgrade} className="row wrap" noValidate>
            <label>Version
              <select name="upgrade-version" value={version} onChange={(e) => setVersion(e.target.value)} required>
                <option value="">Choose…</option>
                {detail.data.versions.map((v) => <option key={v} value={v}>{v}</option>)}
              </select>
            </label>
            <button type="submit" disabled={upgrade.busy || !version}>Upgrade</button>
          </form>
        ) : <p className="muted">No upgrade available now.</p>}
        <ErrorLine text={upgrade.error} />
        <DoneLine text={upgrade.done} />
        </>}
        <h3>Kubeconfig</h3>
        {kubeconfig ? (
          <a className="button" download={`${name}.kubeconfig`} href={`data:application/yaml;charset=utf-8,${encodeURIComponent(kubeconfig)}`}>Download kubeconfig</a>
        ) : <p className="muted">No kubeconfig yet (the control plane is not up).</p>}
      </Loading>
    </Panel>
  );
}
