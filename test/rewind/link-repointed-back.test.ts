// Found by the links-inside property test (links-inside.property.test.ts, seed 1249210675, after the fixes up to
// e4c19d4), shrunk to: `l` a link to the folder `a`; a tool handed `l/f.txt` writes it (in `a/f.txt`); a command
// re-points `l` to `c`; a rewind ("all", keepUndo 0) to after the tool points `l` at `a` again. A second rewind, to
// before the tool, was refused, "l/f.txt (created)": setting `l` to a link took every path the tape recorded below
// it to absent, though below a link a name is only a second name of what the link leads to (`a/f.txt`, there all
// along).
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { it } from "vitest";
import { rewind } from "../../src/index.js";
import { smallSession } from "../helpers/small-session.js";

it("a link re-pointed by a command and back by a rewind: a rewind to before a tool wrote below it", async () => {
  const s = await smallSession("agent-tape-link-repointed-back-", { folders: ["a", "c"], links: { l: "a" } });
  const written = await s.tool("write_file", ["l/f.txt"], () =>
    writeFile(join(s.workspace, "l/f.txt"), "through the link\n"),
  );
  await s.command("rm l && ln -s c l");
  await rewind(s.store, s.id, { toSequence: written, mode: "all", keepUndo: 0 });
  await s.rewindThenUndo();
});
