// Found by the links-inside property test (links-inside.property.test.ts, seed 2, 200 runs, after the fixes up to
// 669b8ad), shrunk to: `l` a link to the folder `b`; a command removes `b/sub`; a tool handed `l/sub/g.txt` runs
// (and writes nothing); a rewind to the start puts `b/sub` back; a second one, to after the command, was refused,
// "l/sub (created)". The capture
// records `l/sub` as the missing folder above the path handed, a second name (below the link) of `b/sub`, and the
// after-state recorded it absent by that name: the rewind that put `b/sub` back wrote it by its own.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind } from "../../src/index.js";
import { smallSession } from "../helpers/small-session.js";

it("the missing folder above a path handed below a link, put back by its own name: a rewind, no conflict", async () => {
  const s = await smallSession("agent-tape-missing-below-link-", {
    files: { "b/sub/z.txt": "z\n" },
    modes: { "b/sub": 0o700 },
    links: { l: "b" },
  });
  const afterCommand = await s.command("rm -rf b/sub");
  await s.tool("delete", ["l/sub/g.txt"], () => rm(join(s.workspace, "l/sub/g.txt"), { force: true }));
  const removed = await s.tree();
  await rewind(s.store, s.id, { toSequence: s.start, mode: "files" });
  expect(await s.tree()).toEqual(s.before);
  const report = await rewind(s.store, s.id, { toSequence: afterCommand, mode: "all", keepUndo: 0 });
  expect(report.skipped).toEqual([]);
  expect(await s.tree()).toEqual(removed);
});
