import { describe, expect, it } from "vitest";
import { storeMessage, storeWords } from "./storeWords";

describe("lvmd-agent messages in words", () => {
  it("says field paths as what they are", () => {
    expect(storeWords("Backup.data_source.s3.path: must name the backup's own prefix in the bucket")).toBe(
      "The backup's bucket and path: must name the backup's own prefix in the bucket");
    expect(storeWords("no backup at data_source.s3.path")).toBe("No backup at the backup's bucket and path");
    expect(storeWords("credentials.access_key_id: the backup is in a store that is not the agent's own")).toBe(
      "The access key id: the backup is in a store that is not the agent's own");
    expect(storeWords("size_bytes: the backup holds 1073741824 bytes")).toBe("The size: the backup holds 1073741824 bytes");
    expect(storeWords("backup.name: may only contain letters")).toBe("The backup name: may only contain letters");
    expect(storeWords("backup_job_id: job 3 is a restore, not a backup")).toBe("The backup: job 3 is a restore, not a backup");
  });
  it("never shows an RPC path", () => {
    const s = storeWords("role viewer may not call /plinth.lvmd.v1.JobService/DeleteBackup (write)");
    expect(s).not.toContain("/plinth.");
    expect(s).toContain("this action");
  });
  it("keeps words the agent already says, with no disclosure", () => {
    const m = "the bucket plinth-lvmd does not exist at http://127.0.0.1:7304";
    expect(storeMessage(m)).toEqual({ text: "The bucket plinth-lvmd does not exist at http://127.0.0.1:7304", details: "" });
    expect(storeMessage("no backup at data_source.s3.path").details).toBe("no backup at data_source.s3.path");
    expect(storeMessage("Complete.")).toEqual({ text: "Complete.", details: "" });
  });
});
