// The console against make up's dev Ceph (a real single-node cluster): Storage names the
// cluster by its fsid, says HEALTH_OK, lists its pools and its OSD up and in, and every radar
// score is a number; a volume's page backs up to lvmd-agent's default store (the dev radosgw)
// with nothing but a name and a path. axe-core on each page. Screenshots go to OUT_DIR.
//
//   CONSOLE_URL=http://127.0.0.1:8080 PLINTH_PASSWORD=... CEPH_FSID=<fsid> node console/e2e/storage-ceph.mjs
//
// e2e/devceph_test.go runs it. Exit status 0 only if every step passed.
import { chromium } from "playwright-core";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const env = (k, d) => {
  const v = process.env[k] ?? d;
  if (v === undefined || v === "") throw new Error(`${k} is required`);
  return v;
};
const base = env("CONSOLE_URL").replace(/\/$/, "");
const password = env("PLINTH_PASSWORD");
const fsid = env("CEPH_FSID");
const outDir = env("OUT_DIR", "test-output/storage-ceph");
const executablePath = env("CHROMIUM", "/usr/bin/chromium");
// The bucket of lvmd-agent's default store on the dev radosgw.
const bucket = env("LVMD_BUCKET", "plinth-lvmd");
mkdirSync(outDir, { recursive: true });

const log = (...a) => console.log(new Date().toISOString(), ...a);
const browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: "light" });
const page = await context.newPage();
const problems = [];
page.on("pageerror", (e) => problems.push(String(e)));
page.on("dialog", (d) => void d.accept());
page.setDefaultTimeout(30_000);
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const shot = async (name) => {
  await page.screenshot({ path: join(outDir, `${name}.png`), fullPage: true });
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axeSource);
  const bad = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations
    .filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.impact} ${v.id}: ${v.help}`));
  for (const b of bad) problems.push(`${name}: ${b}`);
};

let step = "sign in";
try {
  await page.goto(`${base}/storage`);
  await page.getByLabel("Username").fill("admin");
  await page.getByLabel("Password").fill(password);
  await page.getByLabel("Password").press("Enter");
  await page.getByRole("heading", { level: 1, name: "Storage" }).waitFor();

  step = "storage: the dev Ceph named, HEALTH_OK, its pools and OSD, the radar's numbers";
  await page.getByTestId("cluster-name").getByText(new RegExp(`^Ceph cluster ${fsid}`)).waitFor({ timeout: 90_000 });
  await page.getByTestId("health-reason").getByText(/^HEALTH_OK/).waitFor({ timeout: 90_000 });
  const pools = page.locator("#pools tr[data-pool]");
  await pools.first().waitFor();
  const poolNames = await pools.evaluateAll((rows) => rows.map((r) => r.getAttribute("data-pool")));
  // The radosgw's pools (.rgw.root, default.rgw.*): the dev S3 stores in them.
  if (!poolNames.some((n) => n.includes("rgw"))) throw new Error(`the pools do not include the radosgw's: ${poolNames}`);
  const osd = page.locator('#osds li[data-osd="0"]');
  await osd.getByText(/up/i).waitFor();
  const values = await page.getByTestId("radar-values").innerText();
  for (const axis of ["Health", "Nodes", "Stability", "Reliability", "Free capacity"]) {
    if (!new RegExp(`${axis}\\s+\\d+(\\.\\d)?%`).test(values)) throw new Error(`the radar's ${axis} has no number: ${values}`);
  }
  const cap = (await page.getByTestId("capacity-text").textContent()) ?? "";
  if (!/ free \(\d+(\.\d)?%\)/.test(cap)) throw new Error(`a real cluster's capacity without its free share: "${cap}"`);
  log("storage:", poolNames.join(", "), "|", await osd.textContent(), "|", cap, "|", values.replace(/\s+/g, " "));
  await shot("storage-ceph");

  step = "volume page: a backup to the agent's default store (the dev radosgw), named with its bucket and prefilled; restored; deleted";
  const volume = `ceph-${Date.now().toString(36)}`;
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Volumes" }).click();
  await page.getByLabel("Name", { exact: true }).fill(volume);
  await page.getByRole("button", { name: "Create", exact: true }).click();
  await page.locator(`tr[data-volume="${volume}"]`).getByRole("link", { name: volume }).click();
  await page.getByRole("heading", { level: 1, name: `Volume ${volume}` }).waitFor();
  const bk = page.locator("#volume-backup");
  // The store is named (its bucket and endpoint) and the path prefilled in its bucket: nothing
  // to type (issue #40: the prefilled path once named a bucket that did not exist).
  await bk.getByText(new RegExp(`To this agent's store: bucket ${bucket} at http`)).waitFor();
  const name = await bk.locator('input[name="backup-name"]').inputValue();
  const path = await bk.locator('input[name="backup-path"]').inputValue();
  if (!path.startsWith(`${bucket}/backups/${volume}/`)) throw new Error(`the prefilled path ${path} is not in the agent's bucket ${bucket}`);
  await bk.getByRole("button", { name: "Back up" }).click();
  await bk.getByText(`Backup ${name} started: its progress is below.`).waitFor();
  const job = page.locator(`#volume-jobs tr[data-job="${name}"]`);
  await job.getByText("Complete", { exact: true }).waitFor({ timeout: 120_000 });
  log("default-store backup:", await job.innerText());
  // Restored into a new volume from the agent's store (no keys asked), then deleted.
  await job.getByRole("button", { name: "Restore…" }).click();
  const rs = page.locator("#restore-backup");
  await rs.locator('input[name="restore-name"]').fill(`${volume}-r`);
  await rs.getByRole("button", { name: "Restore", exact: true }).click();
  await rs.getByText(new RegExp(`^Restoring ${name} into the new volume ${volume}-r`)).waitFor({ timeout: 60_000 });
  await page.goto(`${page.url().replace(/\/volumes\/.*$/, "")}/volumes/${volume}-r`);
  await page.locator(`#volume-jobs tr[data-job="${volume}-r"]`).getByText("Complete", { exact: true }).waitFor({ timeout: 120_000 });
  await shot("volume-restored-ceph");
  const removeByName = async (v) => {
    await page.locator("#volume-remove").getByRole("button", { name: "Remove volume" }).click();
    await page.locator("#volume-remove").locator('input[name="confirm-name"]').fill(v);
    await page.locator("#volume-remove").getByRole("button", { name: "Remove volume" }).click();
    await page.getByRole("heading", { level: 1, name: "Volumes" }).waitFor();
  };
  await removeByName(`${volume}-r`);
  await page.locator(`tr[data-volume="${volume}"]`).getByRole("link", { name: volume }).click();
  await job.getByRole("button", { name: "Delete…" }).click();
  const del = page.locator("#delete-backup");
  await del.locator('input[name="confirm-name"]').fill(name);
  await del.getByRole("button", { name: "Delete backup" }).click();
  await del.getByText(`Deleted backup ${name} (2 objects).`).waitFor({ timeout: 60_000 });
  await removeByName(volume);

  if (problems.length) throw new Error(`page errors or accessibility violations:\n${problems.join("\n")}`);
  log("storage with Ceph: every step passed");
} catch (err) {
  console.error(`FAILED at "${step}": ${err.stack ?? err}`);
  await page.screenshot({ path: join(outDir, "failure.png"), fullPage: true }).catch(() => {});
  process.exitCode = 1;
} finally {
  await browser.close();
}
