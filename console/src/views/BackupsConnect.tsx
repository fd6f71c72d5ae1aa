// The Backups page's guidance: how to connect a PostgreSQL cluster (CloudNativePG) to
// cnpgi-plugin, with the Cluster's YAML for the names the user types.
import { useState } from "react";
import { checkNames, clusterSnippet, connectDocs, docUrl, pluginName } from "../lib/pgconnect";
import { CopyButton } from "./ui";

/** The steps, the YAML and the documents. */
export function ConnectGuide() {
  const [cluster, setCluster] = useState("pg-example");
  const [store, setStore] = useState("main");
  const problem = checkNames(cluster, store);
  const yaml = clusterSnippet(cluster, store);
  return (
    <div data-testid="connect-guide">
      <ol>
        <li>Run cnpgi-plugin where CloudNativePG (1.26 or later) finds it: on Kubernetes its Service labelled <code>cnpg.io/pluginName: {pluginName}</code> (<code>deploy/k8s</code>); under <code>make up</code> its socket <code>.plinth/plugins/{pluginName}</code>.</li>
        <li>Give the plugin a store: an S3 bucket or a directory, named in its store configuration (<code>PLINTH_CNPGI_CONFIG</code>; on Kubernetes the ConfigMap <code>cnpgi-plugin-config</code>).</li>
        <li>In the Cluster's namespace, create the Secret <code>plinth-cnpgi-sidecar</code> the plugin's sidecar reads (its database URL and the store's keys).</li>
        <li>List the plugin in the Cluster's <code>spec.plugins</code> as its WAL archiver, and take base backups with <code>method: plugin</code>:</li>
      </ol>
      <div className="row wrap">
        <label>Cluster name <input value={cluster} onChange={(e) => setCluster(e.target.value.trim())} spellCheck={false} aria-invalid={problem.startsWith("Cluster") || undefined} /></label>
        <label>Object store <input value={store} onChange={(e) => setStore(e.target.value.trim())} spellCheck={false} aria-invalid={problem.startsWith("Object") || undefined} /></label>
      </div>
      {problem ? <p className="error" role="alert">{problem}</p> : (
        <>
          <pre className="snippet" data-testid="connect-yaml"><code>{yaml}</code></pre>
          <CopyButton value={yaml} text="Copy YAML" />
        </>
      )}
      <p>The server appears here once its first WAL segment is archived; its recovery window opens with its first base backup.</p>
      <p className="muted">In the Plinth repository:</p>
      <ul>
        {connectDocs.map((d) => (
          <li key={d.path + d.anchor}><a href={docUrl(d)} rel="noreferrer" target="_blank"><code>{d.path}</code></a>: {d.what}</li>
        ))}
      </ul>
    </div>
  );
}
