import { describe, expect, it } from "vitest";
import { checkNames, clusterSnippet, connectDocs, docUrl, pluginName } from "./pgconnect";

describe("connecting a PostgreSQL cluster", () => {
  it("names the plugin in the Cluster's plugins entry and the backups' configuration", () => {
    const y = clusterSnippet("pg-orders", "main");
    expect(pluginName).toBe("cnpgi.plinth.dev");
    expect(y).toContain("  name: pg-orders\n");
    expect(y).toContain(`  plugins:\n    - name: ${pluginName}\n      isWALArchiver: true`);
    expect(y).toContain("objectStore: main");
    expect(y).toContain(`  method: plugin\n  pluginConfiguration:\n    name: ${pluginName}\n`);
    expect(y).toContain("name: pg-orders-nightly");
  });
  it("checks the names as Kubernetes and the plugin would", () => {
    expect(checkNames("pg-example", "main")).toBe("");
    expect(checkNames("pg.example", "ceph")).toMatch(/^Cluster name/);
    expect(checkNames("PG", "main")).toMatch(/^Cluster name/);
    expect(checkNames("-pg", "main")).toMatch(/^Cluster name/);
    expect(checkNames("a".repeat(64), "main")).toMatch(/^Cluster name/);
    expect(checkNames("pg", "")).toMatch(/^Object store/);
    expect(checkNames("pg", "Main")).toMatch(/^Object store/);
    expect(checkNames("pg", "a: b")).toMatch(/^Object store/);
  });
  it("points at the repository's documents", () => {
    expect(connectDocs.length).toBeGreaterThan(0);
    expect(docUrl(connectDocs[0])).toBe("https://github.com/plinth-dev/plinth/blob/main/services/cnpgi-plugin/README.md#which-store-and-server-name");
    expect(docUrl({ path: "deploy/k8s/README.md", anchor: "" })).toBe("https://github.com/plinth-dev/plinth/blob/main/deploy/k8s/README.md");
  });
});
