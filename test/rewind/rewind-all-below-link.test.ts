// Found by the links-inside property test (links-inside.property.test.ts, seed 2, 200 runs, after the fixes up to
// 8e509ff), shrunk to: `l` a link to the folder `b`; a command removes `b/sub`; a tool handed `l/sub/g.txt` runs
// (and writes nothing); a rewind to the start puts `b/sub` back; a second rewind to the start ("all", keepUndo 0)
// deleted `b/sub` and everything in it: the capture had recorded `l/sub` absent (the missing folder above the path
// handed, by the name below the link), and the rewind deleted it through the link.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { rewind } from "../../src/index.js";
import { smallSession } from "../helpers/small-session.js";

it("a missing folder named below a link: a rewind to before it deletes nothing through the link", async () => {
  const s = await smallSession("agent-tape-rewind-all-below-link-", {
    files: { "b/sub/z.txt": "z\n" },
    modes: { "b/sub": 0o700 },
    links: { l: "b" },
  });
  await s.command("rm -rf b/sub");
  await s.tool("delete", ["l/sub/g.txt"], () => rm(join(s.workspace, "l/sub/g.txt"), { force: true }));
  await rewind(s.store, s.id, { toSequence: s.start, mode: "files" });
  expect(await s.tree()).toEqual(s.before);
  await rewind(s.store, s.id, { toSequence: s.start, mode: "all", keepUndo: 0 });
  expect(await s.tree()).toEqual(s.before);
});
