// Found by the links-inside property test (links-inside.property.test.ts, seed 3, 200 runs), shrunk to: `l` a
// link to the folder `a`; a command deletes `a/x.txt` (its after-state: absent); a tool handed `l` writes `l/x.txt`,
// which lands in `a`. The capture takes `a` (where `l` leads) as a complete listing, unknown until an after-state,
// but the after-state names only `l`, and `a/x.txt` stayed recorded absent: a rewind to before all of it was refused,
// "a/x.txt (created)", a file the session itself wrote.
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { it } from "vitest";
import { smallSession } from "../helpers/small-session.js";

it("a tool handed a link to a folder writes in it a file a command deleted: the rewind, no conflict", async () => {
  const s = await smallSession("agent-tape-into-link-target-", {
    files: { "a/x.txt": "x\n" },
    modes: { a: 0o700 }, // not the mode a new folder gets: the rewind changes `a`
    links: { l: "a" },
  });
  await s.checkpoints.aroundCommand(s.id, { tool: "bash" }, () => rm(join(s.workspace, "a/x.txt")));
  await s.tool("write_into", ["l"], () => writeFile(join(s.workspace, "l/x.txt"), "written through the link\n"));
  await s.rewindThenUndo();
});
