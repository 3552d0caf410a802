// The session page exported from a tampered tape (docs/ARCHITECTURE.md, "Session view"), opened in headless
// Chromium: hand-written lines put markup where the schema says numbers (a rewind's counts, an undo's
// number, a fork's sequence, a change's diff figures). A listener on 127.0.0.1 stands where that markup
// points (an image, a form, a meta refresh, a frame, a link prefetch): it must see no request, the page
// must stay where it was loaded, and nothing in it may be an element the page did not write itself.
import { once } from "node:events";
import { appendFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { cli } from "../cli/harness.js";
import { Browser } from "../helpers/chromium.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const browsers: Browser[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(browsers.splice(0).map((b) => b.close()));
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A listener on 127.0.0.1 recording every request it gets. */
async function listener() {
  const seen: string[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    seen.push(`${request.method} ${request.url}`);
    response.end("<!doctype html><title>reached</title>");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/** Markup aimed at the listener, one piece per way a page can reach out. */
function attacks(to: string): string[] {
  return [
    `<img src="${to}/img" onerror="fetch('${to}/onerror')">`,
    `<form action="${to}/form" method="post"><button id="send">send</button></form>`,
    `<meta http-equiv="refresh" content="0;url=${to}/refresh">`,
    `<iframe src="${to}/frame"></iframe>`,
    `<link rel="prefetch" href="${to}/prefetch"><link rel="stylesheet" href="${to}/sheet">`,
    `<script>location = "${to}/script"</script>`,
    `<style>body { background: url(${to}/css) }</style>`,
    `<base href="${to}/base/">`,
  ];
}

async function tamperedSession(to: string) {
  const base = await tempDir("agent-tape-tampered-page-");
  const root = join(base, "sessions");
  const workspace = join(base, "ws");
  await mkdir(workspace);
  await writeFile(join(workspace, "a.txt"), "one\n");
  const store = openStore({ root });
  const { id } = await store.create({ title: "tampered", workspace });
  await store.append(id, { type: "message", payload: { role: "user", content: "hi" } });
  await store.close();
  const bad = attacks(to);
  const lines = [
    {
      type: "session_rewind",
      payload: {
        targetSequence: bad[0],
        mode: bad[1],
        filesRestored: bad[2],
        filesDeleted: bad[3],
        skipped: bad[4],
        changes: [{ path: "a.txt", action: bad[5], diff: { unit: "lines", insertions: bad[6], deletions: bad[7] } }],
        eventsRemoved: bad[2],
        blobsPruned: bad[0],
      },
    },
    {
      type: "session_rewind",
      payload: { undoOf: bad[2], targetSequence: 1, reappendedRanges: bad[3], changes: bad[6] },
    },
    { type: "session_fork", payload: { parentId: "p", atSequence: bad[2] } },
  ];
  const text = lines
    .map((line, at) =>
      JSON.stringify({
        v: 1,
        id: `ev_tampered_${at}`,
        sessionId: id,
        sequence: 2 + at,
        createdAt: bad[2],
        ...line,
      }),
    )
    .join("\n");
  await appendFile(join(root, id, "events.jsonl"), `${text}\n`);
  return { root, id };
}

describe("the session page from a tampered tape, in headless Chromium", () => {
  it("writes no element of the tape's, fetches nothing and stays where it was loaded", async () => {
    const heard = await listener();
    const { root, id } = await tamperedSession(heard.url);
    const out = join(root, "..", "page.html");
    const exported = await cli(["export", id, "--html", out, "--root", root]);
    expect(exported.code, exported.stderr).toBe(0);
    const html = await readFile(out, "utf8");

    const browser = await Browser.launch(await tempDir("agent-tape-chromium-"));
    browsers.push(browser);
    const page = await browser.newPage();
    await browser.send("Page.enable", {}, page);
    await browser.send("Network.enable", {}, page);
    const requests = browser.collect("Network.requestWillBeSent", page);
    const navigations = browser.collect("Page.frameNavigated", page);
    const url = pathToFileURL(out).href;
    const loaded = browser.waitFor("Page.loadEventFired", page);
    await browser.send("Page.navigate", { url }, page);
    await loaded;
    // A meta refresh of 0 s and a failed image's handler fire right after the load: give them time.
    await new Promise((resolve) => setTimeout(resolve, 2_000));

    const inPage = await browser.evaluate<{ href: string; foreign: string[]; csp: string | null }>(
      page,
      `({ href: location.href,
          foreign: [...document.querySelectorAll(
            "img, form, iframe, link, script, base, button, body meta, body style")]
            .map((e) => e.outerHTML),
          csp: document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.content ?? null })`,
    );
    expect(inPage.foreign).toEqual([]);
    expect(inPage.href).toBe(url);
    expect(heard.seen).toEqual([]);
    expect(requests.map((r) => r.request.url)).toEqual([url]);
    expect(navigations.map((n) => n.frame.url)).toEqual([url]);
    // Each tampered event is still on the page, its bad values shown as text, not dropped.
    for (const sequence of [2, 3, 4]) expect(html).toContain(`id="seq-${sequence}"`);
    // The policy itself: nothing fetched, no form sent, no base, no plugin; the page's own style only.
    expect(inPage.csp).toMatch(/default-src 'none'/);
    expect(inPage.csp).toMatch(/form-action 'none'/);
    expect(inPage.csp).toMatch(/base-uri 'none'/);
    expect(inPage.csp).toMatch(/style-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(inPage.csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
  }, 120_000);
});
