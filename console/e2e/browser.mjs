// The console's browser test: drives Debian's chromium (never a downloaded browser) through
// playwright-core against a running suite (make up): signs in, opens every page, does one real
// thing on each (the admin page creates a user who signs in in a second browser context and is
// then disabled), opens a second tab that shares the session, signs out (which ends it in
// both tabs), and checks the revoked Plinth token and the Vagrant token the console was given
// for it are refused. Screenshots go to OUT_DIR.
//
//   CONSOLE_URL=http://127.0.0.1:8080 PLINTH_USERNAME=admin PLINTH_PASSWORD=... \
//   VAGRANT_RUNNER_ID="$(cat .plinth/vagrant-runner/id)" \
//   VAGRANT_OFFLINE_RUNNER_ID=<a registered runner that is offline> node console/e2e/browser.mjs
//
// e2e/console_test.go runs it against a suite of its own. Exit status 0 only if every step passed.
import { chromium } from "playwright-core";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { oidcSteps } from "./oidc.mjs";

const env = (k, d) => {
  const v = process.env[k] ?? d;
  if (v === undefined || v === "") throw new Error(`${k} is required`);
  return v;
};
const base = env("CONSOLE_URL").replace(/\/$/, "");
const username = env("PLINTH_USERNAME", "admin");
const password = env("PLINTH_PASSWORD");
// The launcher's runner, which the Vagrant page must list online.
const runnerId = env("VAGRANT_RUNNER_ID");
// A runner registered and gone (console_test.go registers one): a job for it stays queued.
const offlineRunnerId = env("VAGRANT_OFFLINE_RUNNER_ID");
const outDir = env("OUT_DIR", "test-output/browser");
const executablePath = env("CHROMIUM", "/usr/bin/chromium");
// A server whose WAL segment was archived through the plugin before the test (console_test.go
// does it); without them the Backups page is only opened.
const walServer = process.env.CNPGI_SERVER ?? "";
const walSegment = process.env.CNPGI_WAL ?? "";
// A volume backup console_test.go ran to completion through the gateway (to a versitygw).
const volumeBackup = process.env.LVMD_BACKUP ?? "";
// That S3 server: a volume's page backs up there, naming the endpoint and keys (the suite's
// lvmd-agent has no default store). Without it the volume page's backup is not tried.
const s3 = {
  endpoint: process.env.LVMD_S3_ENDPOINT ?? "", bucket: process.env.LVMD_S3_BUCKET ?? "",
  accessKeyId: process.env.LVMD_S3_ACCESS_KEY_ID ?? "", secretAccessKey: process.env.LVMD_S3_SECRET_ACCESS_KEY ?? "",
};
// The dev OpenID provider's user (make up -dev-oidc; console_test.go starts the suite so):
// with its password the OpenID steps run (oidc.mjs).
const devOIDCUser = process.env.DEV_OIDC_USER || "dev";
const devOIDCPassword = process.env.DEV_OIDC_PASSWORD ?? "";
const suffix = Date.now().toString(36);
mkdirSync(outDir, { recursive: true });

const log = (...a) => console.log(new Date().toISOString(), ...a);
const browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: "light" });
// The generated password's copy button writes the clipboard; the test reads it back.
await context.grantPermissions(["clipboard-read", "clipboard-write"]);
const page = await context.newPage();
const pageErrors = [];
page.on("pageerror", (e) => pageErrors.push(String(e)));
// Refused calls log "Failed to load resource" (expected: wrong password, revoked token); any
// other console error — a Content-Security-Policy violation, a React warning — fails the test.
page.on("console", (m) => {
  if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) pageErrors.push(m.text());
});
// Every confirmation is accepted, and its question kept for the steps that check it was asked.
const dialogs = [];
// A step that must see a question and say no sets this: the next dialog is dismissed.
let dismissNext = false;
page.on("dialog", (d) => {
  dialogs.push(d.message());
  if (dismissNext) {
    dismissNext = false;
    void d.dismiss();
    return;
  }
  void d.accept();
});
page.setDefaultTimeout(20_000);
// The Vagrant tokens the console sends (vagrant-server issued them to the session): after
// sign-out each must be refused.
const vagrantTokens = new Set();
const watchVagrantTokens = (p) => p.on("request", (r) => {
  const a = r.headers()["authorization"];
  if (r.url().includes("/hashicorp.vagrant.Vagrant/") && a) vagrantTokens.add(a);
});
watchVagrantTokens(page);

let step = "start";
// The accessibility pass: axe-core (npm, pinned in package.json) run on every page the test
// photographs; a serious or critical violation anywhere fails the test at the end, listed.
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const a11yProblems = [];
const audit = async (name, p = page) => {
  // Evaluated through the DevTools protocol, not as a <script>: the console's CSP stays whole.
  if (!(await p.evaluate(() => "axe" in window))) await p.evaluate(axeSource);
  const violations = await p.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) })));
  const bad = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  log(`axe ${name}: ${violations.length} violation(s), ${bad.length} serious or critical`, violations.map((v) => `${v.impact} ${v.id}`).join(", "));
  for (const v of bad) a11yProblems.push(`${name}: ${v.impact} ${v.id} (${v.help}) at ${v.nodes.join(" | ")}`);
};
const shot = async (name) => {
  await page.screenshot({ path: join(outDir, `${name}.png`), fullPage: true });
  if (name !== "failure") await audit(name);
};
const go = async (title) => {
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: title }).click();
  await page.getByRole("heading", { level: 1, name: title }).waitFor();
};
const bearerCall = (token, path) =>
  page.evaluate(async ({ token, path }) => {
    const r = await fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1", authorization: `Bearer ${token}` },
      body: "{}",
    });
    const body = await r.json().catch(() => ({}));
    return { status: r.status, code: body.code ?? "", message: body.message ?? "" };
  }, { token, path });

// A Vagrant API call with a Vagrant token, as Vagrant clients send it (Connect JSON).
const vagrantCall = (token) =>
  page.evaluate(async ({ token }) => {
    const r = await fetch("/hashicorp.vagrant.Vagrant/_ListJobs", {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1", "client-api-protocol": "1,1", authorization: token },
      body: "{}",
    });
    const body = await r.json().catch(() => ({}));
    return { status: r.status, code: body.code ?? "", message: body.message ?? "" };
  }, { token });

async function signIn(landing = "Overview") {
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(password);
  await page.getByLabel("Password").press("Enter"); // the keyboard submits the form
  await page.getByRole("heading", { level: 1, name: landing }).waitFor();
}

try {
  step = "sign-in page";
  await page.goto(`${base}/vagrant`);
  await page.waitForURL(`${base}/signin`);
  await page.getByRole("heading", { name: "Plinth" }).waitFor();
  await shot("01-signin");

  step = "a wrong password is refused in words";
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill("wrong-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  const refused = await page.getByRole("alert").textContent();
  if (!refused || refused.length < 5) throw new Error(`no message for a wrong password: ${refused}`);
  log("wrong password:", refused);

  step = "sign in: back to the page asked for (/vagrant), which works at once (no second sign-in)";
  await signIn("Vagrant");
  await page.getByRole("heading", { name: "Queue a job" }).waitFor();
  if (await page.getByLabel("Vagrant login token").count()) throw new Error("the Vagrant page still asks for a pasted token");
  await go("Storage");
  const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("plinth.session") ?? "{}").token ?? "");
  if (!token) throw new Error("no token in sessionStorage after sign-in");
  if ((await context.cookies()).some((c) => c.value.includes(token))) throw new Error("the token is in a cookie");

  step = "storage: overview, then a refresh";
  await page.getByText(/^Updated /).waitFor();
  const first = await page.getByText(/^Updated /).textContent();
  await page.waitForTimeout(1100);
  await page.getByRole("button", { name: "Refresh" }).click();
  await page.waitForFunction((t) => !document.body.innerText.includes(t), first);
  const storageErr = await page.getByRole("alert").allTextContents();
  log("storage:", storageErr.length ? `error shown: ${storageErr.join(" | ")}` : await page.getByTestId("health").textContent());
  await shot("02-storage");

  step = "storage: the health says why, the cluster is named, the radar's scores are numbers beside it";
  {
    const badge = await page.getByTestId("health").textContent();
    const reason = page.getByTestId("health-reason");
    await reason.waitFor();
    const why = (await reason.textContent()) ?? "";
    if (badge === "Healthy") {
      if (!why.startsWith("HEALTH_OK")) throw new Error(`healthy, but the reason says "${why}"`);
    } else {
      // A warning or error names its checks, and each is listed with its code and words.
      if (!/ because of \d+ health checks?/.test(why)) throw new Error(`"${badge}" without a reason: "${why}"`);
      const listed = await page.locator("#health-checks li[data-check]").count();
      if (listed < 1) throw new Error(`"${why}" but no check listed`);
    }
    const cluster = (await page.getByTestId("cluster-name").textContent()) ?? "";
    if (!cluster || cluster.includes("—") || !/^(Ceph cluster \S+|No Ceph cluster is connected: .+|A Ceph cluster .+)/.test(cluster)) {
      throw new Error(`the cluster is not named or explained: "${cluster}"`);
    }
    const values = await page.getByTestId("radar-values").innerText();
    const score = (axis) => {
      const m = new RegExp(`${axis}\\s+(\\d+(?:\\.\\d)?)%`).exec(values);
      if (!m) throw new Error(`the radar's ${axis} has no number beside it: ${values}`);
      return m[1];
    };
    for (const axis of ["Health", "Nodes", "Stability", "Reliability"]) score(axis);
    const freeOnRadar = score("Free capacity");
    const cap = (await page.getByTestId("capacity-text").textContent()) ?? "";
    const freeInPanel = / free \((\d+(?:\.\d)?)%\)/.exec(cap);
    if (freeInPanel && Number(freeInPanel[1]) !== Number(freeOnRadar)) {
      throw new Error(`Capacity says "${cap}" but the radar's Free capacity is ${freeOnRadar}%`);
    }
    if (!freeInPanel && !cap.startsWith("No reading yet")) throw new Error(`capacity in other words: "${cap}"`);
    const text = await page.locator("main").innerText();
    if (/0 B of 0 B/.test(text)) throw new Error("the page still says \"0 B of 0 B\"");
    await page.locator("#crashes").waitFor();
    log("storage health:", badge, "|", why, "|", cluster, "| radar:", values.replace(/\s+/g, " "), "| capacity:", cap);
  }

  step = "storage: the capacity plot starts with the history stats recorded";
  {
    // What stats has recorded (plinth.stats.v1.HistoryService, asked as the page asks it).
    const server = await page.evaluate(async ({ token }) => {
      const r = await fetch("/plinth.stats.v1.HistoryService/GetCapacityHistory", {
        method: "POST",
        headers: { "content-type": "application/json", "connect-protocol-version": "1", authorization: `Bearer ${token}` },
        body: JSON.stringify({ maxPoints: 300 }),
      });
      return { status: r.status, body: await r.json() };
    }, { token });
    if (server.status !== 200) throw new Error(`GetCapacityHistory: ${server.status} ${JSON.stringify(server.body)}`);
    const points = server.body.points ?? [];
    if (points.length === 0) throw new Error("stats recorded no capacity history");
    const firstMs = Date.parse(points[0].time);
    const plot = page.getByTestId("capacity-plot");
    await plot.waitFor();
    const stored = Number(await plot.getAttribute("data-stored"));
    const first = Number(await plot.getAttribute("data-first"));
    // The page asked when it opened; stats may have recorded more since, never less.
    if (first !== firstMs || stored < 1 || stored > points.length) {
      throw new Error(`plot: ${stored} stored points from ${first}; stats has ${points.length} from ${firstMs} (${points[0].time})`);
    }
    const summary = await page.getByTestId("capacity-history").textContent();
    if (!/^\d+ readings from /.test(summary ?? "")) throw new Error(`no summary of the plot: ${summary}`);
    log("capacity history:", `${points.length} points from stats (first ${points[0].time}, used ${points[0].usedBytes ?? 0} of ${points[0].totalBytes ?? 0}); plot:`, summary);
  }

  step = "vagrant: the launcher's runner is listed online; the job form offers it, the offline one and any runner";
  await go("Vagrant");
  const runnerRow = page.locator(`#runners tr[data-runner="${runnerId}"]`);
  await runnerRow.getByText("Online", { exact: true }).waitFor();
  log("runner:", await runnerRow.textContent());
  await page.getByRole("heading", { name: "Queue a job" }).waitFor();
  const runnerSelect = page.locator(`select[name="runner"]`);
  await page.waitForFunction((ids) => ids.every((id) => document.querySelector(`select[name="runner"] option[value="${id}"]`)), [runnerId, offlineRunnerId]);
  const choices = await runnerSelect.locator("option").allTextContents();
  if (choices[0] !== "Any runner") throw new Error(`the runner choice does not start with any runner: ${choices}`);
  if (!choices.includes(`${offlineRunnerId} (offline: the job waits for it, only jobs addressed to it)`)) throw new Error(`the offline runner is not offered as offline: ${choices}`);
  log("runner choices:", choices.join(" | "));
  step = "vagrant: queue an init job on the runner chosen from the list and watch its output stream in";
  await page.getByLabel("Operation").selectOption("init");
  await runnerSelect.selectOption(runnerId);
  await page.getByRole("button", { name: "Queue job" }).click();
  const queued = await page.getByText(/^Queued job /).textContent();
  const jobId = queued.replace(/^Queued job /, "").replace(/\.$/, "");
  await page.getByTestId("job-ended").waitFor({ timeout: 60_000 });
  const ended = await page.getByTestId("job-ended").textContent();
  const output = await page.getByTestId("job-output").textContent();
  if (!output || output.trim() === "" || output.includes("Waiting for output")) throw new Error(`job ${jobId}: no output (${ended})`);
  if (ended !== "Completed.") throw new Error(`job ${jobId}: ${ended}\n${output}`);
  log(`job ${jobId}: ${ended} ${output.split("\n").length} lines of output`);
  const doneRow = page.locator(`tr[data-job="${jobId}"]`);
  await doneRow.getByText("Succeeded").waitFor();
  const ranOn = await doneRow.locator("td:nth-child(5) [data-id]").getAttribute("data-id");
  // Ids are shortened in the table, whole in their title, and copied whole.
  const shownId = await doneRow.locator("td:nth-child(1) code").textContent();
  if (!(shownId.length < jobId.length && jobId.startsWith(shownId.replace(/…$/, "")))) throw new Error(`job id shown as ${shownId}, want the start of ${jobId}`);
  await doneRow.getByRole("button", { name: `Copy id ${jobId}` }).click();
  const copiedId = await page.evaluate(() => navigator.clipboard.readText());
  if (copiedId !== jobId) throw new Error(`the id's copy button copied ${copiedId}, not ${jobId}`);
  if (ranOn !== runnerId) throw new Error(`job ${jobId} ran on ${ranOn}, not the launcher's runner ${runnerId}`);
  // The id links to the job's own page.
  if ((await doneRow.locator("td:nth-child(1) a").getAttribute("href")) !== `/vagrant/jobs/${jobId}`) throw new Error(`job ${jobId}'s id does not link to its page`);
  await page.getByRole("heading", { name: "Runners" }).scrollIntoViewIfNeeded();
  await runnerRow.getByText("Online", { exact: true }).waitFor();
  if ((await page.locator("#runners tr[data-runner]").count()) < 1) throw new Error("the runner list is empty");
  await shot("03-vagrant");

  step = "vagrant: a job for a runner that is offline stays queued; cancel it";
  await page.getByLabel("Operation").selectOption("noop");
  await runnerSelect.selectOption(offlineRunnerId);
  await page.getByRole("button", { name: "Queue job" }).click();
  await page.waitForFunction((old) => {
    const el = [...document.querySelectorAll(".done")].find((e) => e.textContent.startsWith("Queued job "));
    return el && el.textContent !== old;
  }, `Queued job ${jobId}.`);
  const queued2 = (await page.getByText(/^Queued job /).textContent()).replace(/^Queued job /, "").replace(/\.$/, "");
  const jobRow = page.locator(`tr[data-job="${queued2}"]`);
  await jobRow.getByText("Queued", { exact: true }).waitFor();
  await jobRow.getByRole("button", { name: "Cancel" }).click();
  await page.getByText(`Cancel requested for job ${queued2}.`).waitFor();
  if (!dialogs.some((m) => m.startsWith(`Cancel job ${queued2} (noop)?`))) throw new Error(`no confirmation before the cancel: ${dialogs.join(" | ")}`);
  await jobRow.getByText("Canceled", { exact: true }).waitFor();
  if ((await jobRow.textContent()).includes("job canceled")) throw new Error(`a canceled job still shows its "failure": ${await jobRow.textContent()}`);
  await page.getByTestId("job-ended").waitFor();
  log(`job ${queued2} canceled:`, await jobRow.textContent());
  await runnerSelect.selectOption("");

  step = "vagrant: filter the jobs by how they ended, order them oldest first";
  await page.locator(`select[name="job-filter"]`).selectOption("canceled");
  await jobRow.waitFor();
  await doneRow.waitFor({ state: "detached" });
  if (!/^1 of \d+ jobs$/.test(await page.getByTestId("job-count").textContent())) throw new Error(`canceled filter shows ${await page.getByTestId("job-count").textContent()}`);
  await page.locator(`select[name="job-filter"]`).selectOption("succeeded");
  await doneRow.waitFor();
  await jobRow.waitFor({ state: "detached" });
  await page.locator(`select[name="job-filter"]`).selectOption("active");
  await doneRow.waitFor({ state: "detached" });
  if (await page.getByText("No job is queued or running.").isVisible()) await page.getByRole("button", { name: "Show all jobs" }).click();
  else await page.locator(`select[name="job-filter"]`).selectOption("all");
  await jobRow.waitFor();
  await page.locator(`select[name="job-order"]`).selectOption("oldest");
  const order = await page.locator("#jobs tr[data-job]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-job")));
  if (order.indexOf(jobId) > order.indexOf(queued2)) throw new Error(`oldest first puts ${queued2} before the older ${jobId}: ${order}`);
  await page.locator(`select[name="job-order"]`).selectOption("newest");

  step = "clusters: kaas's choices in the form; a create opens the cluster's own page";
  await go("Clusters");
  const cluster = `console-${suffix}`;
  // The versions and instance types are kaas's (plinth.kaas.v1 GetCatalog), not free text.
  await page.locator(`select[name="version"] option`).nth(1).waitFor({ state: "attached" }); // the catalog has answered
  const versions = await page.locator(`select[name="version"] option`).allTextContents();
  if (versions.length < 2 || !/^Default \(v\d+\.\d+\.\d+\)$/.test(versions[0]) || !versions.slice(1).every((v) => /^v\d+\.\d+\.\d+$/.test(v)))
    throw new Error(`version choices: ${versions}`);
  const types = await page.locator(`select[name="instance-type"] option`).allTextContents();
  if (!types.includes("standard")) throw new Error(`instance types: ${types}`);
  // 0 workers is allowed (a control plane alone) and the form says what that means.
  await page.locator(`input[name="pool-count"]`).fill("0");
  await page.getByTestId("zero-workers").getByText(/control plane only/).waitFor();
  await page.locator(`input[name="pool-count"]`).fill("1");
  if (await page.getByTestId("zero-workers").count()) throw new Error("the 0-workers note stays for 1 worker");
  await page.getByLabel("Name", { exact: true }).fill(cluster);
  await page.locator(`select[name="version"]`).selectOption(versions[versions.length - 1]);
  await page.getByRole("button", { name: "Create", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: `Cluster ${cluster}` }).waitFor();
  if (new URL(page.url()).pathname !== `/clusters/${cluster}`) throw new Error(`the cluster's page is at ${page.url()}`);
  if ((await page.title()) !== `${cluster} · Clusters · Plinth`) throw new Error(`title ${await page.title()}`);
  await page.locator("#cluster-timeline li").first().waitFor();
  const created = await page.locator("#cluster-timeline li").last().textContent();
  if (!/Provisioning/.test(created) || !created.includes(`by ${username}`)) throw new Error(`the timeline's first entry: ${created}`);
  log("cluster page:", await page.locator("#cluster-state").textContent());

  step = "clusters: the page deep-links and survives a reload; the list links to it";
  await page.reload();
  await page.getByRole("heading", { level: 1, name: `Cluster ${cluster}` }).waitFor();
  await page.getByRole("link", { name: "All clusters" }).click();
  await page.getByRole("heading", { level: 1, name: "Clusters" }).waitFor();
  const row = page.locator(`tr[data-cluster="${cluster}"]`);
  await row.waitFor();
  log("cluster listed:", await row.textContent());
  await audit("clusters-list");
  await row.getByRole("link", { name: cluster }).click();
  await page.getByRole("heading", { level: 1, name: `Cluster ${cluster}` }).waitFor();
  // A cluster kaas does not know is asked for once, not every 5 s.
  const asked = [];
  const countAsks = (r) => { if (r.url().includes("no-such-cluster") || (r.method() === "POST" && /ClusterInfoService\/GetClusterInfo$/.test(r.url()))) asked.push(r.url()); };
  page.on("request", countAsks);
  await page.goto(`${base}/clusters/no-such-cluster`);
  await page.getByRole("heading", { level: 1, name: "Cluster not found" }).waitFor();
  const firstAsks = asked.length;
  await page.waitForTimeout(11_000);
  page.off("request", countAsks);
  if (asked.length !== firstAsks) throw new Error(`a cluster that does not exist was asked for ${asked.length - firstAsks} more time(s) in 11 s`);
  await page.goto(`${base}/clusters/${cluster}`);
  await page.getByRole("heading", { level: 1, name: `Cluster ${cluster}` }).waitFor();

  step = "clusters: the pools to scale are the cluster's; scaling a pool adds a machine";
  await page.getByRole("heading", { name: "Machines" }).waitFor();
  await page.locator(`select[name="scale-pool"] option`).first().waitFor({ state: "attached" });
  const scalable = await page.locator(`select[name="scale-pool"] option`).allTextContents();
  if (scalable.join() !== "workers") throw new Error(`pools offered for scaling: ${scalable}`);
  // Over kaas's largest pool (its catalog): refused in the console's words, before any call.
  await page.locator(`input[name="scale-count"]`).fill("100000");
  await page.getByRole("button", { name: "Scale" }).click();
  await page.locator("#cluster-actions").getByText(/^A pool has at most \d+ machines here\.$/).waitFor();
  // Scaling to zero asks first (said no here: nothing is sent).
  await page.locator(`input[name="scale-count"]`).fill("0");
  dismissNext = true;
  await page.getByRole("button", { name: "Scale" }).click();
  if (!dialogs.some((d) => d.startsWith(`Scale pool workers of ${cluster} to 0 machines?`))) throw new Error(`no confirmation before scaling to 0: ${dialogs}`);
  if (await page.getByText(`Scaling workers of ${cluster} to 0.`).count()) throw new Error("scaled to 0 though the question was answered no");
  await page.locator(`input[name="scale-count"]`).fill("2");
  await page.getByRole("button", { name: "Scale" }).click();
  await page.getByText(`Scaling workers of ${cluster} to 2.`).waitFor();
  await page.locator("#cluster-machines tbody tr").nth(2).waitFor({ timeout: 90_000 });
  log("cluster scaled:", await page.locator("#cluster-machines tbody tr").count(), "machines");
  // Each machine links the vagrant job that provisioned it.
  const jobLink = page.locator("#cluster-machines tbody tr").first().getByRole("link", { name: "Job output" });
  await jobLink.waitFor({ timeout: 90_000 });
  await shot("04-clusters");
  await jobLink.click();
  await page.getByRole("heading", { level: 1, name: /^Job / }).waitFor();
  if (!new URL(page.url()).pathname.startsWith("/vagrant/jobs/")) throw new Error(`the job's page is at ${page.url()}`);
  await page.locator("#job-facts").getByText("Operation").waitFor();
  await page.getByTestId("job-output").waitFor();
  log("machine's job:", await page.locator("#job-facts").textContent());
  await audit("vagrant-job-page");
  await page.goBack();
  await page.getByRole("heading", { level: 1, name: `Cluster ${cluster}` }).waitFor();

  step = "clusters: delete asks, then only reading is left";
  await page.getByRole("button", { name: "Delete cluster" }).click();
  if (!dialogs.some((d) => d.startsWith(`Delete cluster ${cluster}?`))) throw new Error(`no confirmation before deleting: ${dialogs}`);
  await page.getByText(new RegExp(`^Deleting ${cluster}`)).waitFor();
  await page.waitForFunction(() => {
    const b = [...document.querySelectorAll("button")].find((x) => x.textContent === "Delete cluster");
    return !b || b.disabled;
  }, null, { timeout: 30_000 });
  log("cluster deleting:", await page.locator("#cluster-state").textContent().catch(() => "gone"));

  step = "volumes: device classes, create a volume, remove it";
  await go("Volumes");
  await page.getByRole("heading", { name: "Create a volume" }).waitFor();
  const volume = `console-${suffix}`;
  await page.getByLabel("Name", { exact: true }).fill(volume);
  await page.getByRole("button", { name: "Create", exact: true }).click();
  await page.getByText(new RegExp(`^Created ${volume}`)).waitFor({ timeout: 30_000 });
  const vrow = page.locator(`tr[data-volume="${volume}"]`);
  await vrow.waitFor({ timeout: 30_000 });
  if (volumeBackup) {
    const jrow = page.locator(`tr[data-job="${volumeBackup}"]`);
    await jrow.waitFor({ timeout: 30_000 });
    const bar = jrow.getByRole("progressbar");
    const now = await bar.getAttribute("aria-valuenow");
    if (now !== "100") throw new Error(`the complete backup's progress bar says ${now}`);
    await jrow.getByText("Complete", { exact: true }).waitFor();
    log("backup job:", await bar.getAttribute("aria-valuetext"));
  }
  await shot("05-volumes");
  // The same name and size again: lvmd-agent would answer it as created; the console says
  // nothing was created.
  await page.getByLabel("Name", { exact: true }).fill(volume);
  await page.getByRole("button", { name: "Create", exact: true }).click();
  const createRefusal = page.locator("#create-volume").getByRole("alert");
  await createRefusal.getByText(/already exists in class .* \(1 GiB\): nothing was created\.$/).waitFor();
  // With another size it is refused in GiB, and the refusal shows until the next action, whose
  // outcome replaces it.
  await page.getByLabel("Size (GiB)").fill("2");
  await page.getByRole("button", { name: "Create", exact: true }).click();
  await createRefusal.getByText(/with 1 GiB \(2 GiB asked\): choose another name/).waitFor();
  log("second create refused:", await createRefusal.textContent());
  const devicePath = await vrow.locator("td").nth(2).locator("code").textContent();
  if (!devicePath?.match(new RegExp(`^/dev/[^/]+/${volume}$`))) throw new Error(`the row's device is ${devicePath}, not /dev/<vg>/${volume}`);

  step = "volume page: /volumes/<name> with its device, grown, backed up from the page, removed";
  await vrow.getByRole("link", { name: volume }).click();
  await page.waitForURL(`${base}/volumes/${volume}`);
  await page.getByRole("heading", { level: 1, name: `Volume ${volume}` }).waitFor();
  if (await createRefusal.count()) throw new Error(`the earlier refusal stays on another page: ${await createRefusal.textContent()}`);
  const facts = page.locator("#volume-facts");
  await facts.getByText(devicePath, { exact: true }).waitFor();
  await facts.getByText(/^1 GiB/).waitFor();
  // A deep link survives a reload.
  await page.reload();
  await page.getByRole("heading", { level: 1, name: `Volume ${volume}` }).waitFor();
  // Shrinking is refused before lvmd-agent is asked; growing past the free space in numbers.
  const resize = page.locator("#volume-resize");
  await resize.getByLabel("New size (GiB)").fill("1");
  await resize.getByRole("button", { name: "Grow" }).click();
  await resize.getByRole("alert").getByText(/a volume only grows: choose more than 1 GiB/).waitFor();
  await resize.getByLabel("New size (GiB)").fill("100000");
  await resize.getByRole("button", { name: "Grow" }).click();
  await resize.getByRole("alert").getByText(/needs .* more; only .* is free in this device class/).waitFor();
  log("over-size grow:", await resize.getByRole("alert").textContent());
  await resize.getByLabel("New size (GiB)").fill("2");
  await resize.getByRole("button", { name: "Grow" }).click();
  await resize.getByText(`Grew ${volume} to 2 GiB.`).waitFor({ timeout: 30_000 });
  await facts.getByText(/^2 GiB \(2147483648 bytes\)/).waitFor();
  if (s3.endpoint) {
    step = "volume backups end to end: back up, keep the store, restore into a new volume, delete the backup";
    const bk = page.locator("#volume-backup");
    // The suite's agent has no store of its own: the form says so, prefills no bucket, and a
    // form without an endpoint is refused on that field.
    await bk.getByText(/This agent has no store of its own/).waitFor();
    await bk.locator('input[name="backup-path"]').fill(`${s3.bucket}/console/${volume}`);
    await bk.getByRole("button", { name: "Back up" }).click();
    await bk.getByRole("alert").getByText(/no default store: name the S3 endpoint/).waitFor();
    if ((await bk.locator('input[name="backup-endpoint"]').getAttribute("aria-invalid")) !== "true") throw new Error("the endpoint field is not marked invalid");
    // A bad backup name is refused before lvmd-agent is asked (and lvmd-agent refuses it too).
    const backupName = await bk.locator('input[name="backup-name"]').inputValue();
    await bk.locator('input[name="backup-name"]').fill("Bad Name!/..");
    await bk.getByRole("button", { name: "Back up" }).click();
    await bk.getByRole("alert").getByText(/A backup name may hold letters, digits/).waitFor();
    await bk.locator('input[name="backup-name"]').fill(backupName);
    await bk.locator('input[name="backup-endpoint"]').fill(s3.endpoint);
    await bk.locator('input[name="backup-accessKeyId"]').fill(s3.accessKeyId);
    await bk.locator('input[name="backup-secretAccessKey"]').fill(s3.secretAccessKey);
    await bk.getByRole("button", { name: "Back up" }).click();
    await bk.getByText(`Backup ${backupName} started: its progress is below.`).waitFor({ timeout: 30_000 });
    if (await bk.locator('input[name="backup-secretAccessKey"]').inputValue()) throw new Error("the secret key stays in the form after the backup started");
    const bjob = page.locator(`#volume-jobs tr[data-job="${backupName}"]`);
    await bjob.getByText("Complete", { exact: true }).waitFor({ timeout: 120_000 });
    const bbar = bjob.getByRole("progressbar");
    if ((await bbar.getAttribute("aria-valuenow")) !== "100") throw new Error(`the page's backup's bar says ${await bbar.getAttribute("aria-valuenow")}`);
    log("backup from the volume page:", await bbar.getAttribute("aria-valuetext"), await bjob.locator("td.small-text").last().textContent());
    // The finished backup's hold is gone from the facts with it, not a poll later.
    await page.getByText("no backup or restore holds it").waitFor({ timeout: 3_000 });
    // Only this volume's jobs are listed here: not the backup console_test.go made of another.
    if (volumeBackup && await page.locator(`#volume-jobs tr[data-job="${volumeBackup}"]`).count()) throw new Error("the volume page lists another volume's backup");
    // The store is kept as the user's choice (in this browser, never the secret): after a
    // reload the form names that endpoint and bucket again.
    await page.reload();
    await page.getByRole("heading", { level: 1, name: `Volume ${volume}` }).waitFor();
    if ((await bk.locator('input[name="backup-endpoint"]').inputValue()) !== s3.endpoint) throw new Error("the last store's endpoint was not kept");
    if (!(await bk.locator('input[name="backup-path"]').inputValue()).startsWith(`${s3.bucket}/backups/${volume}/`)) throw new Error("the last store's bucket was not kept");
    if (await bk.locator('input[name="backup-secretAccessKey"]').inputValue()) throw new Error("a secret was kept across a reload");
    if ((await page.evaluate(() => localStorage.getItem("plinth.volumes.backup-store") ?? "")).includes(s3.secretAccessKey)) throw new Error("the secret is in localStorage");

    // Restore into a new volume: the backup is not in the agent's store, so its keys are asked
    // for; a size below the backup's is refused before lvmd-agent is asked.
    const restored = `${volume}-r`;
    await bjob.getByRole("button", { name: "Restore…" }).click();
    const rs = page.locator("#restore-backup");
    await rs.locator('input[name="restore-name"]').fill(restored);
    await rs.locator('input[name="restore-sizeGb"]').fill("1");
    await rs.getByRole("button", { name: "Restore", exact: true }).click();
    await rs.getByRole("alert").getByText(/needs at least 2 GiB/).waitFor();
    await rs.locator('input[name="restore-sizeGb"]').fill("2");
    await rs.getByRole("button", { name: "Restore", exact: true }).click();
    await rs.getByRole("alert").getByText(/not in the agent's store: give that store's access key id and secret/).waitFor();
    // Wrong keys: lvmd-agent refuses them in words (access denied, naming the store), no RPC
    // path or proto field shown; nothing is created.
    await rs.locator('input[name="restore-accessKeyId"]').fill(s3.accessKeyId);
    await rs.locator('input[name="restore-secretAccessKey"]').fill("not-the-secret");
    await rs.getByRole("button", { name: "Restore", exact: true }).click();
    const denied = rs.getByRole("alert");
    await denied.getByText(/access denied/i).waitFor({ timeout: 60_000 });
    const deniedText = await denied.textContent();
    if (/data_source|credentials\.|\/plinth\.|backup_job_id/.test(deniedText ?? "")) throw new Error(`technical text shown: ${deniedText}`);
    log("wrong keys:", deniedText);
    await shot("05-volume-restore-refused");
    await rs.locator('input[name="restore-secretAccessKey"]').fill(s3.secretAccessKey);
    await rs.getByRole("button", { name: "Restore", exact: true }).click();
    await rs.getByText(new RegExp(`^Restoring ${backupName} into the new volume ${restored}`)).waitFor({ timeout: 60_000 });
    await page.goto(`${base}/volumes/${restored}`);
    await page.getByRole("heading", { level: 1, name: `Volume ${restored}` }).waitFor();
    const rjob = page.locator(`#volume-jobs tr[data-job="${restored}"]`);
    await rjob.getByText("Complete", { exact: true }).waitFor({ timeout: 120_000 });
    if ((await rjob.getByRole("progressbar").getAttribute("aria-valuenow")) !== "100") throw new Error("the restore's bar is not at 100");
    await page.locator("#volume-facts").getByText(/^2 GiB \(2147483648 bytes\)/).waitFor();
    log("restored:", await rjob.getByRole("progressbar").getAttribute("aria-valuetext"));
    await shot("05-volume-restored");
    // The restored volume is removed after typing its name.
    await page.locator("#volume-remove").getByRole("button", { name: "Remove volume" }).click();
    await page.locator("#volume-remove").locator('input[name="confirm-name"]').fill(restored);
    await page.locator("#volume-remove").getByRole("button", { name: "Remove volume" }).click();
    await page.waitForURL(`${base}/volumes`);

    // Delete the backup: its name typed, the store's keys given; then it is gone from the list.
    await page.goto(`${base}/volumes/${volume}`);
    await bjob.getByRole("button", { name: "Delete…" }).click();
    const del = page.locator("#delete-backup");
    if (!(await del.getByRole("button", { name: "Delete backup" }).isDisabled())) throw new Error("Delete backup is enabled before the name is typed");
    await del.locator('input[name="confirm-name"]').fill(backupName);
    await del.locator('input[name="delete-accessKeyId"]').fill(s3.accessKeyId);
    await del.locator('input[name="delete-secretAccessKey"]').fill(s3.secretAccessKey);
    await del.getByRole("button", { name: "Delete backup" }).click();
    await del.getByText(`Deleted backup ${backupName} (2 objects).`).waitFor({ timeout: 60_000 });
    await bjob.waitFor({ state: "detached", timeout: 30_000 });
    await shot("05-volume-backup-deleted");
  }
  await shot("05-volume-page");
  // Removal asks for the volume's name: the button does nothing until it is typed exactly.
  const remove = page.locator("#volume-remove");
  await remove.getByRole("button", { name: "Remove volume" }).click();
  await remove.locator('input[name="confirm-name"]').fill(`${volume}x`);
  if (!(await remove.getByRole("button", { name: "Remove volume" }).isDisabled())) throw new Error("Remove volume is enabled with a wrong name typed");
  await remove.locator('input[name="confirm-name"]').fill(volume);
  await remove.getByRole("button", { name: "Remove volume" }).click();
  await page.getByRole("heading", { level: 1, name: "Volumes" }).waitFor();
  await page.waitForURL(`${base}/volumes`);
  await vrow.waitFor({ state: "detached", timeout: 30_000 });
  await page.goto(`${base}/volumes/${volume}`);
  await page.getByRole("heading", { level: 1, name: "Volume not found" }).waitFor();
  await page.getByRole("link", { name: "All volumes" }).first().click();
  await page.getByRole("heading", { level: 1, name: "Volumes" }).waitFor();

  step = "activity: the audit trail names the admin beside the volume they created and removed";
  await go("Activity");
  const removedEntry = page.locator("#activity tbody tr", { hasText: `volume ${volume} removed` });
  await removedEntry.first().waitFor({ timeout: 30_000 });
  if (!(await removedEntry.first().textContent())?.includes(username)) {
    throw new Error(`the activity of the removed volume does not name ${username}: ${await removedEntry.first().textContent()}`);
  }
  log("activity:", await removedEntry.first().textContent());
  await shot("06-activity");

  step = "backups: the server whose WAL was archived, its range and (keyboard) its base backups";
  await go("Backups");
  if (walServer) {
    const srow = page.locator(`tr[data-server="local/${walServer}"]`);
    await srow.waitFor({ timeout: 30_000 });
    const range = await srow.getByTestId("wal-range").textContent();
    if (!range?.includes(walSegment) || !/1 segment/.test(range)) throw new Error(`WAL range "${range}", want ${walSegment}, 1 segment`);
    if (!/None: no completed base backup/.test((await srow.textContent()) ?? "")) throw new Error(`recovery window without a backup: ${await srow.textContent()}`);
    log("backups server:", await srow.textContent());
    await shot("05-backups");
    step = "backups: the server's own page (/backups/<server>), opened from the keyboard";
    await srow.locator("td.actions").getByRole("link", { name: "Base backups" }).focus();
    await page.keyboard.press("Enter");
    await page.waitForURL(`${base}/backups/${walServer}`);
    await page.getByRole("heading", { level: 1, name: `Server ${walServer}` }).waitFor();
    await page.getByRole("heading", { name: "In object store local" }).waitFor();
    await page.getByText(/^No base backup yet\./).waitFor();
    await shot("05-backup-server");
    await page.goto(`${base}/backups/no-such-server`);
    await page.getByRole("heading", { level: 1, name: "Server not found" }).waitFor();
    await page.getByRole("link", { name: "All servers" }).first().click();
    await page.getByRole("heading", { level: 1, name: "Backups" }).waitFor();
  } else {
    await page.locator("#backup-servers").waitFor();
    await shot("05-backups");
  }
  step = "backups: how to connect a PostgreSQL cluster, with its YAML for the names typed";
  {
    const guide = page.locator("#backup-connect");
    await guide.waitFor();
    // Folded under the servers once there are some; in full while there is none.
    if (walServer) await guide.locator("summary").click();
    const yaml = page.getByTestId("connect-yaml");
    await yaml.waitFor();
    const first = (await yaml.textContent()) ?? "";
    for (const want of ["plugins:", "- name: cnpgi.plinth.dev", "isWALArchiver: true", "objectStore: main", "method: plugin"]) {
      if (!first.includes(want)) throw new Error(`the connect YAML lacks "${want}":\n${first}`);
    }
    await guide.getByLabel("Cluster name").fill("pg-orders");
    await page.waitForFunction(() => document.querySelector('[data-testid="connect-yaml"]')?.textContent?.includes("name: pg-orders-nightly"));
    await guide.getByLabel("Cluster name").fill("PG Orders");
    const refusal = (await guide.getByRole("alert").textContent()) ?? "";
    if (!refusal.startsWith("Cluster name:")) throw new Error(`a bad cluster name refused as "${refusal}"`);
    const docs = await guide.locator("a[href*='services/cnpgi-plugin/README.md']").count();
    if (docs < 1) throw new Error("no link to cnpgi-plugin's README");
    log("backups guide:", refusal);
    await guide.getByLabel("Cluster name").fill("pg-example");
    await page.getByTestId("connect-yaml").waitFor();
    await shot("05-backups-connect");
  }


  step = "admin: create a viewer, who signs in elsewhere and is offered no writes; disable them, which ends that session; make them an operator";
  await go("Admin");
  await page.getByRole("heading", { name: "Create a user" }).waitFor();
  const member = `member-${suffix}`.slice(0, 24);
  const memberPassword = `pw-${suffix}-member`;
  await page.getByLabel("Username", { exact: true }).fill(member);
  await page.getByLabel("Password (empty: generate)").fill(memberPassword);
  await page.locator('select[name="new-role"]').selectOption("viewer");
  await page.getByRole("button", { name: "Create user" }).click();
  await page.getByText(`Created ${member}.`).waitFor();
  const urow = page.locator(`tr[data-user="${member}"]`);
  await urow.getByText("Enabled").waitFor();

  // A user with a generated password: shown once beside the outcome, with a copy button.
  const generatedUser = `gen-${suffix}`.slice(0, 24);
  await page.getByLabel("Username", { exact: true }).fill(generatedUser);
  await page.getByRole("button", { name: "Create user" }).click();
  await page.getByText(`Created ${generatedUser}. Generated password (shown once, copy it now):`).waitFor();
  const shown = await page.locator("#create-user").getByTestId("secret-value").textContent();
  await page.locator("#create-user").getByRole("button", { name: "Copy password" }).click();
  await page.locator("#create-user").getByRole("button", { name: "Copied" }).waitFor();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  if (!shown || shown.length < 12 || copied !== shown) throw new Error(`the copy button put ${JSON.stringify(copied)} on the clipboard, the page shows ${JSON.stringify(shown)}`);
  log("generated password copied:", shown.length, "characters");
  log("user created:", await urow.textContent());
  if (!(await page.locator("#users").getByRole("columnheader", { name: "Actions" }).isVisible())) throw new Error("the users table hides its Actions header");
  if ((await urow.locator("td.actions").evaluate((el) => getComputedStyle(el).display)) !== "table-cell") {
    throw new Error("the Actions cell is not a table cell: its border stops short on tall rows");
  }
  if (!(await page.locator(`tr[data-user="${username}"]`).getByRole("button", { name: "Disable" }).isDisabled())) {
    throw new Error("the signed-in admin is offered to disable their own account");
  }
  const other = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const memberPage = await other.newPage();
  await memberPage.goto(`${base}/admin`);
  await memberPage.getByLabel("Username").fill(member);
  await memberPage.getByLabel("Password").fill(memberPassword);
  await memberPage.getByLabel("Password").press("Enter");
  await memberPage.getByRole("heading", { level: 1, name: "Admin" }).waitFor();
  await memberPage.getByText(/You need admin rights/).waitFor();
  await memberPage.screenshot({ path: join(outDir, "09-admin-refused.png"), fullPage: true });
  log("a non-admin on the admin page:", await memberPage.getByRole("status").first().textContent());
  if (await memberPage.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Admin" }).count()) {
    throw new Error("a viewer's menu offers the Admin page");
  }
  await memberPage.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Clusters" }).click();
  await memberPage.getByText(/your role is viewer/).waitFor();
  await memberPage.getByRole("heading", { name: "Clusters", level: 2 }).waitFor();
  if (await memberPage.getByRole("heading", { name: "Create a cluster" }).count()) throw new Error("a viewer is offered to create clusters");
  // The volume the admin left (the backup's) is listed to the viewer without a Remove button.
  await memberPage.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Volumes" }).click();
  await memberPage.getByRole("heading", { name: /^Device class / }).first().waitFor();
  if (volumeBackup) await memberPage.locator("tr[data-volume]").first().waitFor({ timeout: 30_000 });
  if (await memberPage.getByRole("heading", { name: "Create a volume" }).count() || await memberPage.getByRole("button", { name: "Remove" }).count()) {
    throw new Error("a viewer is offered to create or remove volumes");
  }
  // Nor to restore, delete or dismiss a backup (the list is theirs to read) ...
  if (volumeBackup) await memberPage.locator(`#volume-jobs tr[data-job="${volumeBackup}"]`).waitFor({ timeout: 30_000 });
  for (const name of ["Restore…", "Delete…", "Dismiss"]) {
    if (await memberPage.locator("#volume-jobs").getByRole("button", { name }).count()) throw new Error(`a viewer is offered ${name} on a backup`);
  }
  // ... and the gateway refuses those calls to a viewer (PermissionDenied) and to a caller
  // without a token (Unauthenticated), whatever the page shows.
  const attack = await memberPage.evaluate(async () => {
    const token = JSON.parse(sessionStorage.getItem("plinth.session") ?? "{}").token ?? "";
    const out = {};
    for (const m of ["RestoreBackup", "DeleteBackup", "DismissJob"]) {
      for (const [who, auth] of [["viewer", `Bearer ${token}`], ["anonymous", ""]]) {
        const headers = { "content-type": "application/proto", "connect-protocol-version": "1" };
        if (auth) headers.authorization = auth;
        const r = await fetch(`/plinth.lvmd.v1.JobService/${m}`, { method: "POST", headers, body: new Uint8Array([8, 1]) });
        const body = await r.json().catch(() => ({}));
        out[`${who} ${m}`] = body.code ?? `HTTP ${r.status}`;
      }
    }
    return out;
  });
  for (const [call, code] of Object.entries(attack)) {
    const want = call.startsWith("viewer") ? "permission_denied" : "unauthenticated";
    if (code !== want) throw new Error(`${call}: ${code}, want ${want}`);
  }
  log("viewer and anonymous job writes refused:", JSON.stringify(attack));
  await memberPage.screenshot({ path: join(outDir, "10-viewer-volumes.png"), fullPage: true });
  // The Vagrant page: the jobs, and no form to queue one nor a button to cancel one.
  await memberPage.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Vagrant" }).click();
  await memberPage.getByRole("heading", { name: "Jobs", level: 2 }).waitFor({ timeout: 30_000 });
  await memberPage.getByText(/your role is viewer/).waitFor();
  if (await memberPage.getByRole("heading", { name: "Queue a job" }).count() || await memberPage.getByRole("button", { name: "Cancel" }).count()) {
    throw new Error("a viewer is offered to queue or cancel vagrant jobs");
  }
  await memberPage.screenshot({ path: join(outDir, "10-viewer-vagrant.png"), fullPage: true });
  await shot("09-admin");
  await urow.getByRole("button", { name: "Disable" }).click();
  await page.getByText(`Disabled ${member}.`).waitFor();
  await urow.getByText("Disabled", { exact: true }).waitFor();
  await memberPage.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Storage" }).click();
  await memberPage.getByText(/^You were signed out: /).waitFor({ timeout: 30_000 });
  log("disabled user's session ended:", await memberPage.getByRole("status").first().textContent());
  await urow.locator('select[name="user-role"]').selectOption("operator");
  await page.getByText(`${member} is now operator.`).waitFor();
  if ((await urow.locator('select[name="user-role"]').inputValue()) !== "operator") throw new Error("the role change does not show in the users table");
  await other.close();

  step = "dark mode and a phone screen";
  await page.emulateMedia({ colorScheme: "dark" });
  await page.setViewportSize({ width: 390, height: 844 });
  // The menu folds behind a button; a choice in it closes it again.
  const mainNav = page.getByRole("navigation", { name: "Main" });
  if (await mainNav.isVisible()) throw new Error("on a phone the menu is not folded");
  await page.getByRole("button", { name: "Menu" }).click();
  await go("Volumes");
  if (await mainNav.isVisible()) throw new Error("the folded menu stays open after a choice");
  const headerHeight = await page.locator("header.top").evaluate((el) => el.getBoundingClientRect().height);
  if (headerHeight > 110) throw new Error(`the phone header is ${headerHeight} px tall`);
  // The create form's fields follow each other without blank space.
  await page.getByRole("heading", { name: "Create a volume" }).waitFor();
  const gaps = await page.locator("#create-volume form label").evaluateAll((ls) => ls.slice(1).map((l, i) => l.getBoundingClientRect().top - ls[i].getBoundingClientRect().bottom));
  if (gaps.some((g) => g > 24)) throw new Error(`blank space between the phone form's fields: ${gaps.map((g) => Math.round(g))} px`);
  await page.getByRole("button", { name: "Menu" }).click();
  await go("Storage");
  await shot("06-storage-dark-phone");
  // The first Tab stop of a page just opened is the skip link, and it moves focus to the page.
  await page.reload();
  await page.getByRole("heading", { level: 1, name: "Storage" }).waitFor();
  await page.keyboard.press("Tab");
  if ((await page.evaluate(() => document.activeElement?.textContent)) !== "Skip to content") throw new Error("the first Tab stop is not the skip link");
  await page.keyboard.press("Enter");
  if ((await page.evaluate(() => document.activeElement?.id)) !== "main") throw new Error("the skip link does not move focus to the page");
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize({ width: 1280, height: 900 });

  step = "an address that names no page says so, keeps the address, and the menu still works";
  await page.goto(`${base}/no-such-page`);
  await page.getByRole("heading", { level: 1, name: "Page not found" }).waitFor();
  if (!page.url().endsWith("/no-such-page")) throw new Error(`the unknown address became ${page.url()}`);
  if ((await page.title()) !== "Page not found · Plinth") throw new Error(`title ${await page.title()}`);
  await shot("10-not-found");
  await go("Storage");

  step = "a new tab of the console is signed in with the same session";
  const tab2 = await context.newPage();
  watchVagrantTokens(tab2);
  await tab2.goto(`${base}/vagrant`);
  await tab2.getByRole("heading", { level: 1, name: "Vagrant" }).waitFor();
  await tab2.getByRole("heading", { name: "Queue a job" }).waitFor();
  const tab2Token = await tab2.evaluate(() => JSON.parse(sessionStorage.getItem("plinth.session") ?? "{}").token ?? "");
  if (tab2Token !== token) throw new Error("the new tab does not share the session");
  if (vagrantTokens.size === 0) throw new Error("no Vagrant token was seen on the Vagrant API");
  for (const vt of vagrantTokens) {
    const ok = await vagrantCall(vt);
    if (ok.status !== 200) throw new Error(`a session's Vagrant token is refused while signed in: ${JSON.stringify(ok)}`);
  }
  await tab2.screenshot({ path: join(outDir, "11-second-tab.png"), fullPage: true });

  step = "sign out, in both tabs, and the revoked token and its Vagrant tokens are refused";
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByText("You signed out.").waitFor();
  await tab2.getByText("You signed out.").waitFor();
  await tab2.waitForURL(`${base}/signin`);
  if (await tab2.evaluate(() => sessionStorage.getItem("plinth.session"))) throw new Error("the second tab kept the session after sign-out");
  await tab2.close();
  await page.waitForURL(`${base}/signin`);
  if (await page.evaluate(() => sessionStorage.getItem("plinth.session"))) throw new Error("session kept after sign-out");
  await shot("07-signed-out");
  let refusal;
  for (let i = 0; i < 50; i++) {
    refusal = await bearerCall(token, "/stats.StatsService/GetClusterStats");
    if (refusal.code === "unauthenticated") break;
    await page.waitForTimeout(200);
  }
  if (refusal.code !== "unauthenticated") throw new Error(`the revoked token was not refused: ${JSON.stringify(refusal)}`);
  log("revoked token refused:", refusal.status, refusal.message);
  for (const vt of vagrantTokens) {
    let vr;
    for (let i = 0; i < 50; i++) {
      vr = await vagrantCall(vt);
      if (vr.code === "unauthenticated") break;
      await page.waitForTimeout(200);
    }
    if (vr.code !== "unauthenticated") throw new Error(`a Vagrant token of the ended session was not refused: ${JSON.stringify(vr)}`);
  }
  log(`${vagrantTokens.size} Vagrant token(s) of the session refused after sign-out`);

  step = "a token revoked elsewhere sends the user back to sign-in with a message";
  await signIn("Storage"); // back to the page signed out of
  const token2 = await page.evaluate(() => JSON.parse(sessionStorage.getItem("plinth.session") ?? "{}").token ?? "");
  const out = await bearerCall(token2, "/services.auth.AuthService/Logout");
  if (out.status !== 200) throw new Error(`logout from outside the page: ${JSON.stringify(out)}`);
  await page.getByText(/^You were signed out: /).waitFor({ timeout: 30_000 });
  await shot("08-revoked-elsewhere");

  step = "overview: the home page, a card per service with its state; what needs attention links to its page";
  await signIn("Storage"); // back to the page the session ended on
  await page.goto(`${base}/`);
  await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
  if (new URL(page.url()).pathname !== "/overview") throw new Error(`/ opens ${page.url()}`);
  for (const card of ["Storage", "Clusters", "Volumes", "WAL archiving", "Vagrant runners"]) {
    const c = page.locator("section.card").filter({ has: page.getByRole("heading", { level: 2, name: card }) });
    await c.getByTestId("card-state").waitFor({ timeout: 30_000 });
    log(`overview ${card}:`, (await c.textContent())?.replace(/\s+/g, " "));
  }
  // The runner registered and gone (console_test.go) is offline: named, linking to the Vagrant page.
  const runnersCard = page.locator("#card-vagrant");
  const offline = runnersCard.getByRole("link", { name: new RegExp(`^Runner ${offlineRunnerId.slice(0, 12)}: Offline`) });
  await offline.waitFor();
  if (walServer) await page.locator("#card-backups").getByText(/PostgreSQL server/).waitFor();
  await shot("00-overview");
  await offline.click();
  await page.getByRole("heading", { level: 1, name: "Vagrant" }).waitFor();
  await page.locator("header .brand").click();
  await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();

  step = "an expiring session sends the user back to sign-in when it expires";
  await page.evaluate(() => {
    const s = JSON.parse(sessionStorage.getItem("plinth.session"));
    // Long enough for a reload on a loaded machine to show the page first (1.5 s was not, once).
    s.expiresAt = Date.now() + 5000;
    sessionStorage.setItem("plinth.session", JSON.stringify(s));
  });
  await page.reload();
  await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
  await page.getByText("Your session expired. Sign in again.").waitFor({ timeout: 20_000 });

  step = "keyboard: the menu is reachable with Tab and opens a page with Enter";
  await signIn();
  await page.evaluate(() => document.activeElement instanceof HTMLElement && document.activeElement.blur());
  let reached = false;
  for (let i = 0; i < 10 && !reached; i++) {
    await page.keyboard.press("Tab");
    reached = await page.evaluate(() => document.activeElement?.textContent === "Clusters");
  }
  if (!reached) throw new Error("the Clusters link is not reachable with Tab");
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { level: 1, name: "Clusters" }).waitFor();
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByText("You signed out.").waitFor();

  if (devOIDCPassword) {
    await oidcSteps({
      browser, base, user: devOIDCUser, password: devOIDCPassword, outDir, log, audit, pageErrors,
      setStep: (s) => { step = s; log(s); },
    });
  } else {
    log("OpenID steps skipped: no DEV_OIDC_PASSWORD (a suite started with -dev-oidc gives one)");
  }

  if (pageErrors.length) throw new Error(`errors in the page: ${pageErrors.join("; ")}`);
  step = "accessibility: no serious or critical axe-core violation on any page";
  if (a11yProblems.length) throw new Error(`axe-core found:\n  ${a11yProblems.join("\n  ")}`);
  log("PASS: every step");
} catch (err) {
  console.error(`FAIL at "${step}": ${err?.stack ?? err}`);
  await shot("failure").catch(() => {});
  await browser.close();
  process.exit(1);
}
await browser.close();
