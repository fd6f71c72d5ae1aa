// How to connect a PostgreSQL cluster to cnpgi-plugin, for the Backups page's guidance: the
// CloudNativePG Cluster's plugins entry and a backup schedule (deploy/k8s/examples/postgres),
// with the names the user types checked as the plugin checks them.

/** The plugin's name in a Cluster's spec.plugins (cnpgi-plugin's default, PLINTH_CNPGI_PLUGIN_NAME). */
export const pluginName = "cnpgi.plinth.dev";

/** Where the public repository's files are read (the Go module path's repository). */
export const repoFiles = "https://github.com/plinth-dev/plinth/blob/main/";

/** The documents the guidance points to, as repository paths with a section and what each tells. */
export const connectDocs: { path: string; anchor: string; what: string }[] = [
  { path: "services/cnpgi-plugin/README.md", anchor: "which-store-and-server-name", what: "the plugin's parameters: objectStore, serverName, retentionPolicy" },
  { path: "services/cnpgi-plugin/README.md", anchor: "store-configuration-file", what: "the stores (S3 bucket or directory) the plugin writes to" },
  { path: "deploy/k8s/README.md", anchor: "", what: "running the plugin beside CloudNativePG (its Service, TLS pairs and the sidecar's Secret)" },
  { path: "deploy/k8s/examples/postgres/pg-example.yaml", anchor: "", what: "a complete example Cluster and ScheduledBackup" },
];

/** A document's address in the repository. */
export function docUrl(d: { path: string; anchor: string }): string {
  return repoFiles + d.path + (d.anchor ? `#${d.anchor}` : "");
}

/**
 * What is wrong with the names, or "": the Cluster's name is a Kubernetes object name (DNS
 * label: lower-case letters, digits and "-", at most 63) and, as the default serverName, must
 * also be a server name; the store is one of the plugin's store names (1–63 of a-z 0-9 . _ -).
 */
export function checkNames(cluster: string, store: string): string {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(cluster)) {
    return "Cluster name: lower-case letters, digits and \"-\", starting and ending with a letter or digit, at most 63.";
  }
  if (!/^[a-z0-9._-]{1,63}$/.test(store)) return "Object store: 1 to 63 of a-z, 0-9, \".\", \"_\" and \"-\", as in the plugin's store configuration.";
  return "";
}

/** The Cluster and its nightly ScheduledBackup that archive and back up through the plugin into store. */
export function clusterSnippet(cluster: string, store: string): string {
  return `apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: ${cluster}
spec:
  instances: 2
  storage:
    size: 5Gi
  plugins:
    - name: ${pluginName}
      isWALArchiver: true       # WAL goes to the plugin
      parameters:
        objectStore: ${store}   # a store of the plugin's configuration
        retentionPolicy: 7d     # optional
---
apiVersion: postgresql.cnpg.io/v1
kind: ScheduledBackup
metadata:
  name: ${cluster}-nightly
spec:
  schedule: "0 0 3 * * *"
  cluster:
    name: ${cluster}
  method: plugin
  pluginConfiguration:
    name: ${pluginName}
`;
}
