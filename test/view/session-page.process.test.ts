// The session page as a person looks at it (docs/ARCHITECTURE.md, "Session view"): the demo's session
// (`npm run demo`, run as a child process) exported with the CLI and opened in headless Chromium (Debian's
// `chromium`; .ci/run installs it). Without a browser this test fails: it is never skipped. One run each
// at a wide-screen and a phone viewport; a screenshot of each is saved in the test's temp folder, and copied to
// the folder AGENT_TAPE_SCREENSHOTS names if it is set (the temp folder is removed when the test ends).
import { copyFile, mkdir, readdir, stat, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { cli } from "../cli/harness.js";
import { Browser } from "../helpers/chromium.js";
import { runChild } from "../helpers/children.js";
import { closeAfter, openStore, tempDir } from "../helpers/fixture.js";

/** Runs the demo in its own TMPDIR and exports its session: the page's path and the tape it shows. */
async function exportDemo() {
  const tmp = await tempDir("agent-tape-page-demo-");
  const demo = fileURLToPath(new URL("../../examples/agent-loop.ts", import.meta.url));
  const run = await runChild(demo, [], { TMPDIR: tmp, NO_COLOR: "1" });
  expect(run.code, run.stderr).toBe(0);
  const home = (await readdir(tmp)).find((name) => name.startsWith("agent-tape-demo-"));
  const root = join(tmp, home!, "sessions");
  const store = openStore({ root });
  try {
    const [session] = await store.list();
    const events = await store.readAll(session!.id);
    const out = join(tmp, "demo-session.html");
    const exported = await cli(["export", session!.id, "--html", out, "--root", root]);
    expect(exported.code, exported.stderr).toBe(0);
    return { tmp, out, id: session!.id, events };
  } finally {
    await store.close();
  }
}

async function open(browser: Browser, url: string, viewport: { width: number; height: number; mobile: boolean }) {
  const page = await browser.newPage();
  await browser.send(
    "Emulation.setDeviceMetricsOverride",
    { ...viewport, deviceScaleFactor: viewport.mobile ? 2 : 1 },
    page,
  );
  await browser.send("Page.enable", {}, page);
  await browser.send("Network.enable", {}, page);
  const requests = browser.collect("Network.requestWillBeSent", page);
  const loaded = browser.waitFor("Page.loadEventFired", page);
  await browser.send("Page.navigate", { url }, page);
  await loaded;
  return { page, requests };
}

async function screenshot(browser: Browser, page: string, path: string): Promise<void> {
  const { data } = await browser.send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true }, page);
  await writeFile(path, Buffer.from(data as string, "base64"));
  const keep = process.env.AGENT_TAPE_SCREENSHOTS;
  if (keep) {
    await mkdir(keep, { recursive: true });
    await copyFile(path, join(keep, basename(path)));
  }
  console.log(`screenshot: ${path}${keep ? ` (kept in ${keep})` : ""}`);
}

describe("the demo's session page in headless Chromium", () => {
  it("shows every event with its sequence, opens a checkpoint to its diff, fetches nothing, fits a phone", async () => {
    const { tmp, out, id, events } = await exportDemo();
    const browser = await Browser.launch(await tempDir("agent-tape-chromium-"));
    closeAfter(browser);
    const url = pathToFileURL(out).href;

    // Wide screen.
    const wide = await open(browser, url, { width: 1280, height: 900, mobile: false });
    const items = await browser.evaluate<{ seq: string; type: string; shown: string; height: number }[]>(
      wide.page,
      `[...document.querySelectorAll("ol.timeline > li")].map((li) => ({ seq: li.dataset.sequence,
        type: li.dataset.type, shown: li.querySelector(".seq").innerText, height: li.offsetHeight }))`,
    );
    expect(items.map((i) => [Number(i.seq), i.type])).toEqual(events.map((e) => [e.sequence, e.type]));
    for (const item of items) {
      expect(item.shown).toBe(`#${item.seq}`); // the number rewind --to takes, on screen
      expect(item.height).toBeGreaterThan(0);
    }
    expect(await browser.evaluate(wide.page, "document.title")).toBe(`demo: greet() · ${id}`);

    // The first checkpoint (before the edit that made greet() say Hello) is closed: its diff not on screen.
    const first = events.find((e) => e.type === "session_checkpoint")!.sequence;
    const selector = `#seq-${first} details.checkpoint`;
    const closed = await browser.evaluate(
      wide.page,
      `(() => { const d = document.querySelector(${JSON.stringify(selector)});
        // checkVisibility, not offsetHeight: a closed <details> hides its content with content-visibility.
        return { open: d.open, diffShown: d.querySelector("pre.diff").checkVisibility(),
                 summary: d.querySelector("summary").innerText }; })()`,
    );
    expect(closed).toEqual({ open: false, diffShown: false, summary: "before edit_file [call_2]: 1 path +1 \u22121" });

    // Clicked open, as a person would: the file, its figures and its unified diff are shown.
    const opened = await browser.evaluate(
      wide.page,
      `(() => { const d = document.querySelector(${JSON.stringify(selector)});
        d.querySelector("summary").click();
        const diff = d.querySelector("pre.diff");
        const style = (cls) => getComputedStyle(diff.querySelector("." + cls)).backgroundColor;
        return { open: d.open, diffShown: diff.checkVisibility(), diff: diff.innerText,
                 files: d.querySelector("table.files").innerText, ins: style("ins"), del: style("del") }; })()`,
    );
    expect(opened.open).toBe(true);
    expect(opened.diffShown).toBe(true);
    expect(opened.files).toMatch(/^modified\tsrc\/greet\.ts\t\+1 \u22121/);
    expect(opened.diff).toContain("--- a/src/greet.ts\n+++ b/src/greet.ts\n");
    expect(opened.diff).toContain('-  return "Hi, " + name;\n+  return "Hello, " + name;');
    expect(opened.ins).not.toBe(opened.del); // insertions and deletions are told apart by colour
    const wideShot = join(tmp, "session-wide.png");
    await screenshot(browser, wide.page, wideShot);
    expect((await stat(wideShot)).size).toBeGreaterThan(10_000);

    // Nothing but the page itself was requested: no font, sheet, script or image from anywhere.
    expect(wide.requests.map((r) => r.request.url)).toEqual([url]);

    // A phone: one column, nothing wider than the screen (long lines wrap or scroll inside their box).
    const phone = await open(browser, url, { width: 390, height: 844, mobile: true });
    const fit = await browser.evaluate(
      phone.page,
      `({ page: document.documentElement.scrollWidth, screen: window.innerWidth,
          columns: getComputedStyle(document.querySelector("li.event")).display })`,
    );
    expect(fit.page).toBeLessThanOrEqual(fit.screen);
    expect(fit.columns).not.toBe("grid"); // the wide screen's gutter is gone: one column
    const phoneShot = join(tmp, "session-phone.png");
    await screenshot(browser, phone.page, phoneShot);
    expect((await stat(phoneShot)).size).toBeGreaterThan(10_000);
  }, 120_000);
});
