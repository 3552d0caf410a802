// The session page (docs/ARCHITECTURE.md, "Session view") as text: every event with its sequence,
// checkpoints with their diffs, and nothing from the tape able to become markup, a script or a fetch.
import { createHash } from "node:crypto";
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CheckpointStore,
  type SessionStore,
  checkpointChanges,
  renderSessionPage,
  rewind,
  undoRewind,
} from "../../src/index.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const EVIL_NAME = `<img src=x onerror="alert(1)">'&.txt`;
const EVIL_TEXT = `</pre><script>alert("owned")</script><a href="https://example.com/x">`;

// The page's own tags and attributes: anything else in it came from the tape unescaped.
const PAGE_TAGS = new Set(
  (
    "html head meta title style body header h1 dl dt dd p code main ol li div a span time pre strong " +
    "details summary table tbody tr td footer"
  ).split(" "),
);
const PAGE_ATTRIBUTES = new Set("lang charset name content http-equiv class id href".split(" "));
for (const a of ["data-events", "data-sequence", "data-type", "data-path"]) PAGE_ATTRIBUTES.add(a);

async function hostileSession() {
  const base = await realpath(await tempDir("agent-tape-page-"));
  const workspace = join(base, "ws");
  await mkdir(workspace);
  await writeFile(join(workspace, EVIL_NAME), "safe\n");
  const store = openStore({ root: join(base, "sessions") });
  const { id } = await store.create({ workspace, title: `<script>alert("title")</script>` });
  await store.append(id, { type: "message", payload: { role: "user", content: EVIL_TEXT } });
  await store.append(id, { type: "tool_call", payload: { callId: `"><b>`, name: "<i>edit</i>", input: EVIL_TEXT } });
  await new CheckpointStore(store).around(id, { tool: "<u>edit</u>", paths: [EVIL_NAME] }, () =>
    writeFile(join(workspace, EVIL_NAME), `${EVIL_TEXT}\n`),
  );
  await store.append(id, { type: "tool_result", payload: { callId: `"><b>`, output: EVIL_TEXT, isError: true } });
  return { store, id, workspace };
}

async function page(store: SessionStore, id: string) {
  const session = (await store.get(id))!;
  const events = await store.readAll(id);
  const checkpoints = await checkpointChanges(store, id, { patches: true });
  return { html: renderSessionPage({ session, events, checkpoints, generatedAt: "2026-01-01T00:00:00.000Z" }), events };
}

/** The timeline item of event `sequence`, as the page has it. */
function itemOf(html: string, sequence: number): string {
  const start = html.indexOf(`<li id="seq-${sequence}" `);
  expect(start, `#${sequence} on the page`).toBeGreaterThan(-1);
  return html.slice(start, html.indexOf("</li>", start));
}

describe("renderSessionPage", () => {
  it("escapes every name and text from the tape: no tag, attribute or URL of theirs survives", async () => {
    const s = await hostileSession();
    const { html } = await page(s.store, s.id);
    // Every tag in the page is one of the page's own, with the page's own attributes (values quoted).
    const tags = [...html.matchAll(/<([a-z][a-z0-9]*)((?:\s+[a-z-]+(?:="[^"]*")?)*)\s*>/gi)];
    expect(tags.length).toBe([...html.matchAll(/<[a-z]/gi)].length); // no tag that this grammar cannot read
    const names = new Set(tags.map((t) => t[1]!.toLowerCase()));
    expect([...names].filter((n) => !PAGE_TAGS.has(n))).toEqual([]);
    const attributes = new Set(
      tags.flatMap((t) => [...t[2]!.matchAll(/\s+([a-z-]+)(?:="[^"]*")?/gi)].map((a) => a[1]!)),
    );
    expect([...attributes].filter((a) => !PAGE_ATTRIBUTES.has(a))).toEqual([]);
    expect(tags.filter((t) => /href="(?!#seq-\d+")/.test(t[2]!))).toEqual([]); // links only to its own events
    expect(html).toContain("&#60;img src=x onerror=&#34;alert(1)&#34;&#62;&#39;&#38;.txt");
    expect(html).toContain("&#60;/pre&#62;&#60;script&#62;alert(&#34;owned&#34;)&#60;/script&#62;");
    // In the diff too: the added line is the hostile text, escaped.
    expect(html).toContain(`<span class="ins">+&#60;/pre&#62;&#60;script&#62;`);
  });

  it("is self-contained: a CSP forbidding scripts, fetches and forms, its own style only, no URL", async () => {
    const s = await hostileSession();
    const { html } = await page(s.store, s.id);
    const style = html.match(/<style>([\s\S]*?)<\/style>/)![1]!;
    const hash = createHash("sha256").update(style).digest("base64");
    expect(html).toContain(
      `content="default-src 'none'; style-src 'sha256-${hash}'; form-action 'none'; base-uri 'none'"`,
    );
    expect(html).not.toMatch(/<link|<script|@import|url\(/i);
    expect(html).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
  });

  it("lists every event with its sequence, and checkpoints open to their files and diffs", async () => {
    const s = await hostileSession();
    await writeFile(join(s.workspace, "later.txt"), "x\n");
    const target = (await s.store.readAll(s.id))[0]!.sequence;
    await rewind(s.store, s.id, { toSequence: target, mode: "files" });
    const { html, events } = await page(s.store, s.id);
    for (const event of events) expect(html).toContain(`<li id="seq-${event.sequence}" class="event t-${event.type}"`);
    expect(html.match(/<details class="checkpoint">/g)).toHaveLength(1);
    expect(html).toContain("<td>modified</td>");
    expect(html).toContain(`agent-tape rewind ${s.id} --to 2`); // the checkpoint is #3
    expect(html).toContain("Rewind to #1 (mode files)");
  });

  it("shows a rewind and its undo with their per-path figures, and a fork with where it came from", async () => {
    const s = await hostileSession();
    const target = (await s.store.readAll(s.id))[0]!.sequence;
    const rewound = await rewind(s.store, s.id, { toSequence: target });
    const undone = await undoRewind(s.store, s.id);
    const { html, events } = await page(s.store, s.id);
    const rewindItem = itemOf(html, rewound.markerSequence!);
    expect(rewindItem).toContain(`Rewind to #${target} (mode all), ${rewound.eventsRemoved} events removed`);
    // The tool's edit taken back: its one line out, the file's line before it in.
    expect(rewindItem).toContain('<span class="ins">+1</span> <span class="del">\u22121</span>');
    const undoItem = itemOf(html, undone.markerSequence!);
    expect(undoItem).toContain(`Undo of rewind #${rewound.markerSequence}: 1 restored, 0 deleted, `);
    expect(undoItem).toContain(`${undone.eventsRestored} events put back.`);
    expect(events.at(-1)!.sequence).toBe(undone.markerSequence);

    const fork = await s.store.fork(s.id, { atSequence: target, title: "another way" });
    const forked = await page(s.store, fork.id);
    const forkItem = itemOf(forked.html, forked.events.at(-1)!.sequence);
    expect(forkItem).toContain(`data-type="session_fork"`);
    expect(forkItem).toContain(`Forked from <code>${s.id}</code> at #${target}.`);
    expect(forked.html).toContain(`<dt>forked from</dt><dd>${s.id} at #${target}</dd>`);
  });

  it("an empty session says so", async () => {
    const store = openStore({ root: join(await tempDir("agent-tape-page-"), "s") });
    const { id } = await store.create();
    const { html } = await page(store, id);
    expect(html).toContain("This session has no events yet.");
  });
});
