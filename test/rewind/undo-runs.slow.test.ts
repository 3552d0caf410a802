// An undo marker records the former sequences of the events it put back as runs, `[first, last]`
// both included (`reappendedRanges`), not one number per event, so its line and the undo's intent do not grow
// with the cut (docs/ARCHITECTURE.md, "Rewind intent", undo). Markers older versions wrote, listing every
// number in `reappendedFrom`, still read, summarise, render and verify.
import { readFileSync } from "node:fs";
import { readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  isAgentTapeError,
  renderSessionPage,
  rewind,
  undoRewind,
  verify,
  type RewindPayload,
  type StoredEvent,
} from "../../src/index.js";
import { fsBackend, memoryBackend } from "../../src/backend/index.js";
import type { StorageBackend } from "../../src/backend/types.js";
import { summarizeEvent } from "../../src/cli/event-summary.js";
import { lockedAccess } from "../../src/session/locked-access.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const say = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });

async function storeOn(backend: (root: string) => StorageBackend, root?: string) {
  const at = root ?? (await tempDir("agent-tape-undo-runs-"));
  const store = openStore({ backend: backend(at), durability: "none" });
  return { root: at, store };
}

/** The events between two sequences (both excluded), without their numbers: what an undo must put back. */
const unnumbered = (events: StoredEvent[]) => events.map(({ sequence: _s, ...rest }) => rest);

async function lastLine(root: string, id: string): Promise<string> {
  const text = await readFile(join(root, id, "events.jsonl"), "utf8");
  return text.slice(text.lastIndexOf("\n", text.length - 2) + 1, -1);
}

// The size of the cut: 10,000 events in npm test, 100,000 when soaking. What is proved holds at either: listed one
// number each, 10,000 former sequences are a ~60 KB intent and marker line, past both bounds below many times over.
const CUT = rounds(10_000, 100_000);

describe("the undo marker of a large cut stays small", () => {
  it(`undoing a rewind that cut ${CUT} events writes one run: a marker line and an intent of a few KB`, async () => {
    const { root, store } = await storeOn((r) => fsBackend({ root: r }));
    const { id } = await store.create({ title: "long" });
    const total = CUT + 1;
    for (let start = 0; start < total; start += 5000)
      await store.appendMany(
        id,
        Array.from({ length: Math.min(5000, total - start) }, (_, k) => say(`event ${start + k}`)),
      );
    const rewound = await rewind(store, id, { toSequence: 1, mode: "conversation" });
    expect(rewound.eventsRemoved).toBe(CUT);
    let intent = "";
    const undone = await undoRewind(store, id, {
      onProgress: (step) => {
        if (step === "intent-written") intent = readIntentNow(root, id);
      },
    });
    expect(undone.eventsRestored).toBe(CUT);
    // The intent holds the marker: the runs, not one number per event (~590 KB for 100,000 when they were listed).
    expect(intent).toContain(`"reappendedRanges":[[2,${CUT + 1}]]`);
    expect(Buffer.byteLength(intent)).toBeLessThan(4096);

    const line = await lastLine(root, id);
    const marker = JSON.parse(line) as StoredEvent;
    expect(marker.sequence).toBe(undone.markerSequence);
    const payload = marker.payload as RewindPayload;
    expect(payload.reappendedRanges).toEqual([[2, CUT + 1]]);
    expect(payload).not.toHaveProperty("reappendedFrom");
    // ~700 KB for 100,000 when every former sequence was listed; the rest of this marker is a few fixed fields.
    expect(Buffer.byteLength(line)).toBeLessThan(600);
  }, 120_000);
});

describe.each([
  { form: "byte-range archive (fs)", backend: (root: string) => fsBackend({ root }) },
  { form: "archive of events (memory backend)", backend: (_root: string) => memoryBackend() },
])("former sequences with gaps, $form", ({ backend }) => {
  /**
   * 1..10, a rewind to 5 (marker #11, not undone), two more events (#12, #13), then a rewind to 3: it cuts
   * #4, #5, #11, #12, #13, whose numbers have a gap where the first rewind's cut was.
   */
  async function gappedCut() {
    const { root, store } = await storeOn(backend);
    const { id } = await store.create({ title: "gaps" });
    await store.appendMany(
      id,
      Array.from({ length: 10 }, (_, k) => say(`event ${k + 1}`)),
    );
    expect((await rewind(store, id, { toSequence: 5, mode: "conversation" })).markerSequence).toBe(11);
    await store.append(id, say("after the first rewind"));
    await store.append(id, say("and one more"));
    const before = await store.readAll(id);
    const cut = before.filter((e) => e.sequence > 3);
    expect(cut.map((e) => e.sequence)).toEqual([4, 5, 11, 12, 13]);
    const second = await rewind(store, id, { toSequence: 3, mode: "conversation" });
    expect(second.markerSequence).toBe(14);
    return { root, store, id, cut };
  }

  it("the undo records one run per stretch of consecutive numbers, exactly", async () => {
    const t = await gappedCut();
    const undone = await undoRewind(t.store, t.id);
    expect(undone.eventsRestored).toBe(5);
    const after = await t.store.readAll(t.id);
    const marker = after.at(-1)!;
    expect(marker.sequence).toBe(20);
    expect((marker.payload as RewindPayload).reappendedRanges).toEqual([
      [4, 5],
      [11, 13],
    ]);
    const putBack = after.filter((e) => e.sequence > 14 && e.sequence < 20);
    expect(putBack.map((e) => e.sequence)).toEqual([15, 16, 17, 18, 19]);
    expect(unnumbered(putBack)).toEqual(unnumbered(t.cut));
    expect(summarizeEvent(marker)).toBe("undo of rewind #14: 0 restored, 0 deleted, 5 events put back");
    expect((await verify(t.store, t.id)).problems).toEqual([]);
  });

  it("a run of one: the earlier rewind's marker alone between two stretches", async () => {
    const { store } = await storeOn(backend);
    const { id } = await store.create({ title: "one" });
    await store.appendMany(
      id,
      Array.from({ length: 10 }, (_, k) => say(`event ${k + 1}`)),
    );
    await rewind(store, id, { toSequence: 5, mode: "conversation" }); // marker #11
    await rewind(store, id, { toSequence: 3, mode: "conversation" }); // cuts 4, 5, 11; marker #12
    await undoRewind(store, id);
    const marker = (await store.readAll(id)).at(-1)!;
    expect(marker.sequence).toBe(16);
    expect((marker.payload as RewindPayload).reappendedRanges).toEqual([
      [4, 5],
      [11, 11],
    ]);
  });

  it("an undo that puts back no events (a files-only rewind) records no runs", async () => {
    const { store } = await storeOn(backend);
    const workspace = await realpath(await tempDir("agent-tape-undo-runs-ws-"));
    const { id } = await store.create({ title: "none", workspace });
    await store.append(id, say("one"));
    await store.append(id, say("two"));
    await rewind(store, id, { toSequence: 1, mode: "files" });
    const undone = await undoRewind(store, id);
    expect(undone.eventsRestored).toBe(0);
    const marker = (await store.readAll(id)).at(-1)!;
    expect((marker.payload as RewindPayload).reappendedRanges).toEqual([]);
    expect(summarizeEvent(marker)).toBe("undo of rewind #3: 0 restored, 0 deleted, 0 events put back");
  });
});

describe("an archive of events (the older form) whose numbers are not the cut's", () => {
  // The runs are gathered as the events come, so they must come in order and from the cut: an archive edited
  // to hold them otherwise is STORE_TAMPERED, as an altered byte-range archive is, and nothing is changed.
  for (const [what, edit] of [
    ["two events swapped", (events: StoredEvent[]) => events.reverse()],
    ["an event numbered at the target", (events: StoredEvent[]) => void (events[0]!.sequence = 3)],
    ["an event numbered at the rewind's marker", (events: StoredEvent[]) => void (events.at(-1)!.sequence = 14)],
  ] as const) {
    it(`${what}: the undo refuses`, async () => {
      const { store } = await storeOn((_root) => memoryBackend());
      const { id } = await store.create({ title: "json archive" });
      await store.appendMany(
        id,
        Array.from({ length: 10 }, (_, k) => say(`event ${k + 1}`)),
      );
      await rewind(store, id, { toSequence: 5, mode: "conversation" }); // #11
      await store.append(id, say("twelve"));
      await store.append(id, say("thirteen"));
      await rewind(store, id, { toSequence: 3, mode: "conversation" }); // cuts 4, 5, 11-13; marker #14
      const name = "rewind-archive-14";
      const record = (await store.backend.readRecord(id, name)) as { events: StoredEvent[] };
      expect(record.events.map((e) => e.sequence)).toEqual([4, 5, 11, 12, 13]);
      edit(record.events);
      await lockedAccess(store).withLockedSession(id, (locked) => locked.writeRecord(name, record));
      const before = await store.readAll(id);
      const error = await undoRewind(store, id).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isAgentTapeError(error, "STORE_TAMPERED"), String(error)).toBe(true);
      expect(await store.readAll(id)).toEqual(before);
    });
  }
});

/** Rewrites the log by hand: `edit` changes the payload of the last event. Returns that event. */
/**
 * Ten events, a rewind to 5 left in place, two more events, a rewind to 3 undone: the undo puts back events whose
 * former sequences have a gap (4-5 and 11-13). The store is closed, so a test can edit the files.
 */
async function undoneGappedStory(title: string): Promise<{ root: string; id: string }> {
  const { root, store } = await storeOn((r) => fsBackend({ root: r }));
  const { id } = await store.create({ title });
  await store.appendMany(
    id,
    Array.from({ length: 10 }, (_, k) => say(`event ${k + 1}`)),
  );
  await rewind(store, id, { toSequence: 5, mode: "conversation" });
  await store.append(id, say("after the first rewind"));
  await store.append(id, say("and one more"));
  await rewind(store, id, { toSequence: 3, mode: "conversation" });
  await undoRewind(store, id);
  await store.close();
  return { root, id };
}

async function editLastPayload(root: string, id: string, edit: (payload: any) => void): Promise<StoredEvent> {
  const file = join(root, id, "events.jsonl");
  const lines = (await readFile(file, "utf8")).split("\n");
  const at = lines.length - 2; // the text ends with a newline
  const event = JSON.parse(lines[at]!);
  edit(event.payload);
  lines[at] = JSON.stringify(event);
  await writeFile(file, lines.join("\n"));
  return event as StoredEvent;
}

describe("undo markers as older versions wrote them (every former sequence in reappendedFrom)", () => {
  /** The gapped story undone, its marker written back the old way; the store reopened, as a later version finds it. */
  async function oldMarker(reappendedFrom = [4, 5, 11, 12, 13]) {
    const { root, id } = await undoneGappedStory("old");
    const marker = await editLastPayload(root, id, (payload) => {
      delete payload.reappendedRanges;
      payload.reappendedFrom = reappendedFrom;
    });
    expect(marker.sequence).toBe(20);
    return { id, marker, ...(await storeOn((r) => fsBackend({ root: r }), root)) };
  }

  it("read, summarise, render and verify as before", async () => {
    const t = await oldMarker();
    const events = await t.store.readAll(t.id);
    const marker = events.at(-1)!;
    expect(marker.payload).toMatchObject({ undoOf: 14, reappendedFrom: [4, 5, 11, 12, 13] });
    expect(marker.payload).not.toHaveProperty("reappendedRanges");
    expect(summarizeEvent(marker)).toBe("undo of rewind #14: 0 restored, 0 deleted, 5 events put back");
    const page = renderSessionPage({ session: (await t.store.get(t.id))!, events, checkpoints: [] });
    expect(page).toContain("Undo of rewind #14: 0 restored, 0 deleted, 5 events put back.");
    expect((await verify(t.store, t.id)).problems).toEqual([]);
  });

  it("a later rewind past one, and its undo, read it as any other marker", async () => {
    const t = await oldMarker();
    const before = await t.store.readAll(t.id);
    const report = await rewind(t.store, t.id, { toSequence: 2, mode: "conversation" });
    expect(report.eventsRemoved).toBe(before.length - 2);
    await undoRewind(t.store, t.id);
    const after = await t.store.readAll(t.id);
    const putBack = after.filter((e) => e.sequence > report.markerSequence! && e.sequence < after.at(-1)!.sequence);
    expect(unnumbered(putBack)).toEqual(unnumbered(before.slice(2)));
    expect(putBack.at(-1)!.payload).toMatchObject({ undoOf: 14, reappendedFrom: [4, 5, 11, 12, 13] });
    // #3, then the rewind marker #14 the old undo followed, its 5 events and the old undo marker itself.
    expect((after.at(-1)!.payload as RewindPayload).reappendedRanges).toEqual([
      [3, 3],
      [14, 20],
    ]);
    expect((await verify(t.store, t.id)).problems).toEqual([]);
  });

  it("verify reports one whose list does not count the events between the rewind it undid and itself", async () => {
    const t = await oldMarker([4, 5, 11, 12]);
    expect((await verify(t.store, t.id)).problems).toEqual([
      expect.objectContaining({ kind: "marker_inconsistent", sequence: 20, message: expect.stringMatching(/#20/) }),
    ]);
  });
});

describe("verify holds an undo marker's runs to the tape", () => {
  async function verifyEdited(edit: (payload: any) => void) {
    const t = await undoneGappedStory("verify");
    await editLastPayload(t.root, t.id, edit);
    const { store } = await storeOn((r) => fsBackend({ root: r }), t.root);
    return (await verify(store, t.id)).problems;
  }

  it("runs that count fewer events than it put back: marker_inconsistent", async () => {
    const problems = await verifyEdited((p) => {
      p.reappendedRanges = [
        [4, 5],
        [11, 12],
      ];
    });
    expect(problems).toEqual([
      expect.objectContaining({ kind: "marker_inconsistent", sequence: 20, message: expect.stringMatching(/4.*5/) }),
    ]);
  });

  it("runs outside what the undone rewind cut (at or below its target, past its marker): inconsistent", async () => {
    for (const runs of [
      [
        [3, 4],
        [11, 13],
      ],
      [
        [4, 5],
        [12, 14],
      ],
    ]) {
      const problems = await verifyEdited((p) => {
        p.reappendedRanges = runs;
      });
      expect(problems, JSON.stringify(runs)).toEqual([
        expect.objectContaining({ kind: "marker_inconsistent", sequence: 20 }),
      ]);
    }
  });

  it("runs out of order, overlapping, or reversed do not fit the schema: payload_invalid", async () => {
    for (const runs of [
      [
        [11, 13],
        [4, 5],
      ],
      [
        [4, 11],
        [11, 13],
      ],
      [[5, 4]],
      [[4, 5, 6]],
      [[0, 2]],
    ]) {
      const problems = await verifyEdited((p) => {
        p.reappendedRanges = runs;
      });
      expect(problems, JSON.stringify(runs)).toEqual([
        expect.objectContaining({ kind: "payload_invalid", sequence: 20, type: "session_rewind" }),
      ]);
    }
  });

  it("an undo marker a later undo put back has a new number: it is not held to its old count", async () => {
    const { store } = await storeOn((r) => fsBackend({ root: r }));
    const { id } = await store.create({ title: "moved" });
    await store.appendMany(
      id,
      Array.from({ length: 10 }, (_, k) => say(`event ${k + 1}`)),
    );
    await rewind(store, id, { toSequence: 5, mode: "conversation" }); // #11
    await undoRewind(store, id); // #6-#10 back as #12-#16, undo marker #17
    await store.append(id, say("after the undo")); // #18
    await rewind(store, id, { toSequence: 16, mode: "conversation" }); // cuts #17, #18; marker #19
    await undoRewind(store, id); // #17, #18 back as #20, #21; undo marker #22
    const events = await store.readAll(id);
    expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 11, 12, 13, 14, 15, 16, 19, 20, 21, 22]);
    const moved = events.find((e) => e.sequence === 20)!;
    expect(moved.payload).toMatchObject({ undoOf: 11, reappendedRanges: [[6, 10]] }); // its numbers as written
    expect((events.at(-1)!.payload as RewindPayload).reappendedRanges).toEqual([[17, 18]]);
    expect((await verify(store, id)).problems).toEqual([]);
  });

  it("a marker with both forms that disagree: marker_inconsistent", async () => {
    const problems = await verifyEdited((p) => {
      p.reappendedFrom = [4, 5, 11, 12, 14];
    });
    expect(problems).toEqual([expect.objectContaining({ kind: "marker_inconsistent", sequence: 20 })]);
  });
});

/** Read synchronously inside onProgress: the intent is deleted once the undo completes. */
function readIntentNow(root: string, id: string): string {
  return readFileSync(join(root, id, "records", "rewind-intent.json"), "utf8");
}
