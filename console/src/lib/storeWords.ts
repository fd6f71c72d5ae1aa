// lvmd-agent's messages in words people read: the agent names request fields as proto paths
// ("Backup.data_source.s3.path", "credentials.access_key_id", "backup_job_id") and a role's
// refusal names the RPC path; the console says what they are instead, and keeps the agent's
// own words for a "Details" disclosure.

/** Proto field paths lvmd-agent uses, most specific first, and what they are in words. */
const fields: [RegExp, string][] = [
  [/\b(?:[A-Z]\w*\.)?(?:backup\.)?data_source\.s3\.path\b/g, "the backup's bucket and path"],
  [/\b(?:[A-Z]\w*\.)?(?:backup\.)?data_source\.s3\.endpoint\b/g, "the S3 endpoint"],
  [/\b(?:[A-Z]\w*\.)?(?:backup\.)?(?:data_source\.s3\.|credentials\.)?encryption_key\b/g, "the encryption key"],
  [/\b(?:[A-Z]\w*\.)?(?:backup\.)?(?:data_source\.s3\.|credentials\.)access_key_id\b/g, "the access key id"],
  [/\b(?:[A-Z]\w*\.)?(?:backup\.)?(?:data_source\.s3\.|credentials\.)secret_access_key\b/g, "the secret access key"],
  [/\b(?:[A-Z]\w*\.)?(?:backup\.)?(?:data_source\.s3\.|credentials\.)session_token\b/g, "the session token"],
  [/\b(?:[A-Z]\w*\.)?(?:backup\.)?data_source\.s3\b/g, "the S3 store"],
  [/\bbackup\.volume_handle\b/g, "the volume"],
  [/\b(?:[A-Z]\w*\.)?backup\.name\b/g, "the backup name"],
  [/\bbackup_job_id\b/g, "the backup"],
  [/\bsize_bytes\b|\bsize_gb\b/g, "the size"],
  [/\bdevice_class\b/g, "the device class"],
  [/\bverify_tls\b/g, "certificate checking"],
];

/** An RPC path ("/plinth.lvmd.v1.JobService/DeleteBackup"). */
const rpcPath = /\/?\b[a-z][a-z0-9]*(?:\.[A-Za-z0-9_]+)+\/[A-Z]\w*/g;

/** The paths in msg replaced by words (no other change). */
function replaced(msg: string): string {
  let out = msg;
  for (const [re, words] of fields) out = out.replace(re, words);
  // "S3 path: ..." is how errors.ts's fieldInWords already said the backup's path.
  return out.replace(rpcPath, "this action").replace(/^S3 path:/, "The backup's bucket and path:");
}

/** A message of lvmd-agent with its proto field paths and RPC paths said in words, as a sentence start. */
export function storeWords(msg: string): string {
  const out = replaced(msg);
  return out.charAt(0).toUpperCase() + out.slice(1);
}

/** A message as a line and its disclosure: the words, and the agent's own text when they differ. */
export function storeMessage(msg: string): { text: string; details: string } {
  return { text: storeWords(msg), details: replaced(msg) === msg ? "" : msg };
}
