// Volumes (lvmd-agent): device classes with their free space (live, from the agent's capacity
// watch), the volumes of each, create and remove a volume; backups and restores with progress.
import { useEffect, useState, type FormEvent } from "react";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { LVService, VGService } from "../gen/lvmd/lvmd_pb";
import type { JobService } from "../gen/plinth/lvmd/v1/jobs_pb";
import type { VolumeService } from "../gen/plinth/lvmd/v1/volumes_pb";
import { explainError } from "../lib/errors";
import { formatBytes } from "../lib/format";
import { usePoll, useAction } from "../lib/hooks";
import { className, deviceClasses, duplicateProblem, sizeGiB, volumeProblem, type DeviceClass } from "../lib/volumes";
import { readOnlyNotice } from "../lib/roles";
import { objectPath } from "../lib/routes";
import { DoneLine, ErrorLine, Link, Panel, TableWrap } from "./ui";
import { VolumeJobs } from "./VolumeJobs";
import { ConfirmByName } from "./ConfirmByName";

function useCapacity(vg: Client<typeof VGService>): { classes: DeviceClass[] | undefined; error: string; details: string; at: number } {
  const [classes, setClasses] = useState<DeviceClass[]>();
  const [error, setError] = useState("");
  const [details, setDetails] = useState("");
  const [at, setAt] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    let retry: ReturnType<typeof setTimeout> | undefined;
    const watch = async () => {
      try {
        for await (const w of vg.watch({}, { signal: ctl.signal })) {
          setClasses(deviceClasses(w));
          setError("");
          setDetails("");
          setAt(Date.now());
        }
      } catch (err) {
        if (ctl.signal.aborted) return;
        const x = explainError(err);
        setError(x.text);
        setDetails(x.details);
      }
      if (!ctl.signal.aborted) retry = setTimeout(watch, 5000);
    };
    void watch();
    return () => {
      ctl.abort();
      if (retry) clearTimeout(retry);
    };
  }, [vg]);
  return { classes, error, details, at };
}

/** canWrite false (a viewer) hides create and remove: lvmd-agent would refuse them. */
export function Volumes({ lv, vg, volumes, jobs, canWrite, go }: {
  lv: Client<typeof LVService>; vg: Client<typeof VGService>; volumes: Client<typeof VolumeService>; jobs: Client<typeof JobService>; canWrite: boolean; go: (p: string) => void;
}) {
  const cap = useCapacity(vg);
  const [changed, setChanged] = useState(0);
  return (
    <>
      <div className="page-head">
        <h1>Volumes</h1>
        <span className="muted">{cap.at ? `Capacity live, last change ${new Date(cap.at).toLocaleTimeString()}` : ""}</span>
      </div>
      <ErrorLine text={cap.error} details={cap.details} />
      {!cap.classes ? (!cap.error && <p className="muted" role="status">Loading device classes…</p>) : (
        <>
          {canWrite ? <CreateVolume lv={lv} vg={vg} classes={cap.classes} onCreated={() => setChanged((c) => c + 1)} /> : <p className="notice" role="status">{readOnlyNotice}</p>}
          {cap.classes.map((c) => <ClassPanel key={c.name} lv={lv} volumes={volumes} dc={c} changed={changed} canWrite={canWrite} go={go} onChanged={() => setChanged((n) => n + 1)} />)}
        </>
      )}
      <VolumeJobs jobs={jobs} vg={vg} canWrite={canWrite} onChanged={() => setChanged((n) => n + 1)} />
    </>
  );
}

function CreateVolume({ lv, vg, classes, onCreated }: { lv: Client<typeof LVService>; vg: Client<typeof VGService>; classes: DeviceClass[]; onCreated: () => void }) {
  const [name, setName] = useState("");
  const [size, setSize] = useState(1);
  const [dc, setDc] = useState(classes[0]?.name ?? "");
  const [problem, setProblem] = useState("");
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const p = volumeProblem(name, size, classes.find((c) => c.name === dc)?.freeBytes);
    setProblem(p);
    if (p) return;
    const ok = await act.run(async () => {
      // lvmd-agent would answer an existing volume of this size as created: ask first (a
      // refusal like the service's, so the next action clears it as it clears every outcome).
      const dup = duplicateProblem(name, size, dc, (await vg.getLVList({ deviceClass: dc })).volumes);
      if (dup) throw new ConnectError(dup, Code.AlreadyExists);
      const r = await lv.createLV({ name, sizeGb: BigInt(size), deviceClass: dc });
      onCreated();
      return `Created ${r.volume?.name ?? name} (${r.volume?.sizeGb ?? size} GiB) in ${className(dc)}.`;
    });
    if (ok) setName("");
  };
  return (
    <Panel title="Create a volume" id="create-volume">
      <form onSubmit={submit} className="row wrap" noValidate>
        <label>Name<input name="volume-name" value={name} onChange={(e) => setName(e.target.value)} required /></label>
        <label>Size (GiB)<input name="volume-size" type="number" min={1} value={size} onChange={(e) => setSize(Number(e.target.value))} /></label>
        <label>Device class
          <select name="device-class" value={dc} onChange={(e) => setDc(e.target.value)}>
            {classes.map((c) => <option key={c.name} value={c.name}>{className(c.name)} ({formatBytes(c.freeBytes)} free)</option>)}
          </select>
        </label>
        <button type="submit" disabled={act.busy}>{act.busy ? "Creating…" : "Create"}</button>
      </form>
      <ErrorLine text={problem || act.error} details={problem ? "" : act.details} />
      <DoneLine text={act.done} />
    </Panel>
  );
}

function ClassPanel({ lv, volumes, dc, changed, canWrite, go, onChanged }: {
  lv: Client<typeof LVService>; volumes: Client<typeof VolumeService>; dc: DeviceClass; changed: number; canWrite: boolean; go: (p: string) => void; onChanged: () => void;
}) {
  const vols = usePoll(async (signal) => (await volumes.listVolumes({ deviceClass: dc.name }, { signal })).volumes, 15000, [volumes, dc.name, changed, dc.freeBytes]);
  const rm = useAction();
  return (
    <Panel title={`Device class ${className(dc.name)}`} id={`dc-${dc.name || "default"}`}>
      <p><strong>{formatBytes(dc.freeBytes)}</strong> free</p>
      <ErrorLine text={vols.error} details={vols.details} />
      {vols.data === undefined ? (vols.loading && <p className="muted" role="status">Loading volumes…</p>) : vols.data.length === 0 ? <p className="muted">No volumes in this class.</p> : (
        <TableWrap>
          <table>
            <thead><tr><th scope="col">Volume</th><th scope="col">Size</th><th scope="col">Device</th><th scope="col">Tags</th>{canWrite && <th scope="col">Actions</th>}</tr></thead>
            <tbody>
              {vols.data.map((v) => (
                <tr key={v.name} data-volume={v.name}>
                  <td><Link to={objectPath("/volumes", v.name)} go={go}>{v.name}</Link>{v.inUseBy && <div className="muted small-text">in use by {v.inUseBy}</div>}</td>
                  <td>{sizeGiB(v.sizeBytes).toString()} GiB</td>
                  <td><code className="small-text">{v.devicePath}</code>{!v.active && <div className="muted small-text">inactive</div>}</td>
                  <td>{v.tags.join(", ") || "—"}</td>
                  {canWrite && <td className="actions">
                    <Link to={objectPath("/volumes", v.name)} go={go} className="button small">Grow or back up</Link>
                    <ConfirmByName small label="Remove" name={v.name} busy={rm.busy} disabled={v.inUseBy !== ""} title={v.inUseBy ? `in use by ${v.inUseBy}` : undefined}
                      what={<>Remove volume <strong>{v.name}</strong>? Its data is lost.</>}
                      onConfirm={() => void rm.run(async () => {
                        await lv.removeLV({ name: v.name, deviceClass: dc.name });
                        onChanged();
                        return `Removed ${v.name}.`;
                      })} />
                  </td>}
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <ErrorLine text={rm.error} details={rm.details} />
      <DoneLine text={rm.done} />
    </Panel>
  );
}
