// Found by the links-inside property test (links-inside.property.test.ts, seed 2, 200 runs, after the fixes of
// f28eb05), shrunk to: `l` a link to the folder `a`; a tool handed `l/x.txt` writes it (in `a/x.txt`); a command
// deletes `a/x.txt` (through the link: `rm -rf l/*`), which the shell capture records by its real path. A rewind to
// before both was refused, "l/x.txt (deleted)": the tool's after-state recorded the name it was handed, below a
// link, and nothing the command recorded says that name changed. The place it lands, `a/x.txt`, has an
// after-state of its own: it is the one checked.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { it } from "vitest";
import { smallSession } from "../helpers/small-session.js";

it("a file a tool wrote below a link, deleted by a command by its real path: the rewind, no conflict", async () => {
  const s = await smallSession("agent-tape-below-link-command-", { files: { "a/x.txt": "x\n" }, links: { l: "a" } });
  await s.tool("write_file", ["l/x.txt"], () => writeFile(join(s.workspace, "l/x.txt"), "through the link\n"));
  await s.command("rm -rf l/*");
  await s.rewindThenUndo();
});
