// The false refusal the links-inside property test met (README, "Limits", until this test): a command makes a
// folder and a file in it (its capture: the folder absent before); a tool handed `l/n/f.txt`, `l` a link to the
// command's folder's parent, writes the file again (its capture records it by both names). A rewind to before both
// was refused, "d/n/f.txt (changed during the rewind)", and rolled back: the plan restored the tool's record by the
// name below the link, through the link, then deleted the folder the command made and found that file in it.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { it } from "vitest";
import { smallSession } from "../helpers/small-session.js";

for (const mode of ["files", "all"] as const)
  it(`a file a command made, changed by a tool through a link: a ${mode} rewind to before both`, async () => {
    const s = await smallSession(`agent-tape-command-file-link-${mode}-`, {
      files: { "d/y.txt": "y\n" },
      links: { l: "d" },
    });
    await s.command("mkdir d/n && echo 1 > d/n/f.txt");
    await s.tool("write", ["l/n/f.txt"], () => writeFile(join(s.workspace, "l/n/f.txt"), "2\n"));
    await s.rewindThenUndo({ mode });
  });
