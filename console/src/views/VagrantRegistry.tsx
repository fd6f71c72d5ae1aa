// What vagrant-server knows: bases, their projects and the projects' targets (the Ref lists
// ListBasis, ListProjects and ListTargets answer), as a tree.
import type { Client } from "@connectrpc/connect";
import type { Vagrant } from "../gen/hashicorp/vagrant/server_pb";
import { usePoll } from "../lib/hooks";
import { registryTree } from "../lib/vagrant";
import { ErrorLine, Panel } from "./ui";

export function VagrantRegistry({ client }: { client: Client<typeof Vagrant> }) {
  const reg = usePoll(async (signal) => {
    const [b, p, t] = await Promise.all([
      client.listBasis({}, { signal }),
      client.listProjects({}, { signal }),
      client.listTargets({}, { signal }),
    ]);
    return registryTree(b.basis, p.projects, t.targets);
  }, 15000, [client]);
  return (
    <Panel title="Bases, projects and targets" id="registry">
      <ErrorLine text={reg.error} details={reg.details} />
      {reg.data === undefined ? (reg.loading && <p className="muted" role="status">Loading the registry…</p>) :
        reg.data.length === 0 ? <p className="muted">No basis registered yet (an init_basis job or the Vagrant CLI registers one).</p> : (
          <ul className="tree">
            {reg.data.map((b) => (
              <li key={b.id}>
                <strong>{b.name}</strong> <span className="muted">{b.path}</span>
                {b.projects.length > 0 && (
                  <ul>
                    {b.projects.map((p) => (
                      <li key={p.id}>
                        {p.name} <span className="muted">{p.path}</span>
                        {p.targets.length > 0 && <ul>{p.targets.map((t) => <li key={t.id}>{t.name}</li>)}</ul>}
                      </li>
                    ))}
                  </ul>
                )}
              </li>
            ))}
          </ul>
        )}
    </Panel>
  );
}
