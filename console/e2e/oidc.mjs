// OpenID sign-in in the browser, against the dev provider `make up -dev-oidc` runs (auth
// dev-oidc, a real OP): "Sign in with Dev" on the sign-in page, the provider's own login page,
// and back on the console signed in, the token out of the address bar and in sessionStorage;
// then a forged callback (/auth/oidc/callback?state=x&code=y) lands on the sign-in page with
// the refusal in words and no session. browser.mjs runs these steps when DEV_OIDC_PASSWORD is
// set; alone, against a suite started with -dev-oidc:
//
//   CONSOLE_URL=http://127.0.0.1:8080 DEV_OIDC_PASSWORD="$(jq -r '.users[0].password' .plinth/dev-oidc.json)" \
//   node console/e2e/oidc.mjs
//
// With PASSWORD_LOGIN=off (auth run with PLINTH_AUTH_PASSWORD_LOGIN=false) the sign-in page
// must offer no password form, only the provider.
import { chromium } from "playwright-core";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * Runs the OpenID steps in contexts of their own (no session of the caller's). setStep names
 * the step for a failure; audit(name, page) is the caller's accessibility pass; errors from the
 * pages are pushed to pageErrors.
 */
export async function oidcSteps({ browser, base, user, password, outDir, log, setStep, audit, pageErrors, passwordLogin = true }) {
  const open = async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: "light" });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    page.on("console", (m) => {
      if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) pageErrors.push(m.text());
    });
    return { context, page };
  };

  setStep("OpenID: the sign-in page offers Sign in with Dev beside the password form");
  const { context, page } = await open();
  await page.goto(`${base}/signin`);
  const link = page.getByRole("link", { name: "Sign in with Dev" });
  await link.waitFor();
  if ((await link.getAttribute("href")) !== "/auth/oidc/dev/start") throw new Error(`the link goes to ${await link.getAttribute("href")}`);
  if (passwordLogin) {
    await page.getByLabel("Username").waitFor(); // password login is on under make up
  } else {
    await page.getByText("Password sign-in is turned off here").waitFor();
    if (await page.getByLabel("Password").count()) throw new Error("the password form shows while auth has password login off");
  }
  await page.screenshot({ path: join(outDir, "oidc-01-signin.png"), fullPage: true });
  await audit("oidc-signin", page);

  setStep("OpenID: the provider's own login page, then back on the console signed in");
  await link.click();
  await page.waitForURL((u) => !u.href.startsWith(base));
  log("at the provider:", page.url().replace(/\?.*/, ""));
  await page.getByLabel("Username").fill(user);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
  const landed = new URL(page.url());
  if (landed.origin !== base || landed.hash !== "" || landed.pathname === "/signin") throw new Error(`landed on ${page.url()}: want the home page without a fragment`);
  const session = await page.evaluate(() => JSON.parse(sessionStorage.getItem("plinth.session") ?? "{}"));
  if (!session.token?.startsWith("plt_") || session.username !== user || session.role !== "admin" || !(session.expiresAt > Date.now())) {
    throw new Error(`the session kept: ${JSON.stringify({ ...session, token: session.token ? "…" : "" })}`);
  }
  if (await page.evaluate(() => history.length > 1 && location.href.includes("token="))) throw new Error("the token is still in the address");
  if ((await context.cookies()).some((c) => c.value.includes(session.token))) throw new Error("the token is in a cookie");
  // The token is a Plinth admin's: the Admin page lists users, the dev user among them.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Admin" }).click();
  await page.getByRole("heading", { level: 1, name: "Admin" }).waitFor();
  await page.getByRole("cell", { name: user, exact: true }).first().waitFor();
  await page.screenshot({ path: join(outDir, "oidc-02-signed-in.png"), fullPage: true });
  log(`signed in through the dev provider as ${session.username} (${session.role})`);
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByText("You signed out.").waitFor();
  await context.close();

  setStep("OpenID: a forged callback is refused in words, with no session");
  const bad = await open();
  await bad.page.goto(`${base}/auth/oidc/callback?state=x&code=y`);
  await bad.page.waitForURL(`${base}/signin`);
  await bad.page.getByText(/^Sign-in refused:/).waitFor(); // after "Loading…" (other tabs asked)
  const notice = (await bad.page.getByRole("status").filter({ hasText: "Sign-in refused" }).textContent()) ?? "";
  if (!/^Sign-in refused: .*not begun in this browser/.test(notice)) throw new Error(`the refusal reads: ${notice}`);
  if (new URL(bad.page.url()).hash !== "") throw new Error(`the fragment stayed: ${bad.page.url()}`);
  if (await bad.page.evaluate(() => sessionStorage.getItem("plinth.session"))) throw new Error("a forged callback left a session");
  await bad.page.getByRole("link", { name: "Sign in with Dev" }).waitFor(); // one can try again
  await bad.page.screenshot({ path: join(outDir, "oidc-03-refused.png"), fullPage: true });
  await audit("oidc-refused", bad.page);
  log("forged callback:", notice);
  await bad.context.close();
}

// Alone: node console/e2e/oidc.mjs (see the top).
if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const env = (k, d) => {
    const v = process.env[k] ?? d;
    if (v === undefined || v === "") throw new Error(`${k} is required`);
    return v;
  };
  const outDir = env("OUT_DIR", "test-output/oidc");
  mkdirSync(outDir, { recursive: true });
  const log = (...a) => console.log(new Date().toISOString(), ...a);
  const browser = await chromium.launch({ executablePath: env("CHROMIUM", "/usr/bin/chromium"), headless: true, args: ["--no-sandbox"] });
  let step = "start";
  const pageErrors = [];
  // axe-core as browser.mjs runs it (through the DevTools protocol; the CSP stays whole).
  const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  const a11yProblems = [];
  const audit = async (name, p) => {
    if (!(await p.evaluate(() => "axe" in window))) await p.evaluate(axeSource);
    const bad = await p.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations
      .filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.impact} ${v.id}`));
    log(`axe ${name}: ${bad.length} serious or critical`);
    for (const v of bad) a11yProblems.push(`${name}: ${v}`);
  };
  try {
    await oidcSteps({
      browser, base: env("CONSOLE_URL").replace(/\/$/, ""), user: env("DEV_OIDC_USER", "dev"), password: env("DEV_OIDC_PASSWORD"),
      outDir, log, setStep: (s) => { step = s; log(s); }, audit, pageErrors,
      // PASSWORD_LOGIN=off: auth runs with PLINTH_AUTH_PASSWORD_LOGIN=false, the form must not show.
      passwordLogin: (process.env.PASSWORD_LOGIN ?? "on") !== "off",
    });
    if (pageErrors.length) throw new Error(`errors in the page: ${pageErrors.join("; ")}`);
    if (a11yProblems.length) throw new Error(`axe-core found: ${a11yProblems.join("; ")}`);
    log("PASS: every OpenID step");
  } catch (err) {
    console.error(`FAIL at "${step}": ${err?.stack ?? err}`);
    await browser.close();
    process.exit(1);
  }
  await browser.close();
}
