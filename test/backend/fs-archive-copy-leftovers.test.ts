// A rewind archive of the byte-range kind is two files: its record (`records/rewind-archive-<m>.json`) and
// the copy of the log's cut part beside it (`.jsonl`). Dropping one deletes the record, then the copy; a
// crash between the two leaves a copy nothing names. The next lock holder sweeps it as a leftover (and gc
// reports it), unless a rewind intent is pending: the intent's own copy has no record yet.
import { readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { gc, rewind, verify } from "../../src/index.js";
import { findLeftovers } from "../../src/backend/fs/leftovers.js";
import { SessionLayout } from "../../src/backend/fs/layout.js";
import { openStore, tempDir } from "../helpers/fixture.js";

async function rewound() {
  const root = await tempDir("agent-tape-archive-leftover-");
  const store = openStore({ root });
  const { id } = await store.create();
  for (let i = 0; i < 5; i++) await store.append(id, { type: "message", payload: { role: "user", content: `m${i}` } });
  await rewind(store, id, { toSequence: 2, mode: "conversation" });
  const records = join(root, id, "records");
  const copy = (await readdir(records)).find((name) => name.endsWith(".jsonl"))!;
  expect(copy).toMatch(/^rewind-archive-\d+\.jsonl$/);
  return { root, store, id, records, copy };
}

it("a copy whose record is gone is swept by gc and reported; the session stays intact", async () => {
  const { store, id, records, copy } = await rewound();
  await rm(join(records, copy.replace(/\.jsonl$/, ".json")));
  const report = await gc(store, { sessionIds: [id] });
  expect(report.sessions[0]!.leftoverFiles).toEqual([`records/${copy}`]);
  expect(await readdir(records)).not.toContain(copy);
  expect((await verify(store, id)).ok).toBe(true);
  await store.close();
});

it("gc reports a copy swept when it took the lock, not only one it found while the lock was held", async () => {
  const { root, store, id, records, copy } = await rewound();
  await rm(join(records, copy.replace(/\.jsonl$/, ".json")));
  await store.close();
  // A new store holds no lock: gc takes it, and taking it sweeps leftovers first.
  const next = openStore({ root });
  const report = await gc(next, { sessionIds: [id] });
  expect(report.sessions[0]!.leftoverFiles).toEqual([`records/${copy}`]);
  expect(await readdir(records)).not.toContain(copy);
  await next.close();
});

it("a copy with its record is no leftover; none is while a rewind intent is pending", async () => {
  const { root, store, id, records, copy } = await rewound();
  const layout = new SessionLayout(root);
  expect(await findLeftovers(layout, id)).toEqual([]);
  await rm(join(records, copy.replace(/\.jsonl$/, ".json")));
  expect(await findLeftovers(layout, id)).toEqual([`records/${copy}`]);
  await writeFile(join(records, "rewind-intent.json"), "{}");
  expect(await findLeftovers(layout, id)).toEqual([]);
  await store.close();
});
