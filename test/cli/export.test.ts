import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TempRoots } from "../helpers/temp-root.js";
import { cli, seedSession } from "./harness.js";

const temps = new TempRoots();
afterEach(() => temps.removeAll());

describe("agent-tape export", () => {
  it("--html writes one page with every event and the checkpoint's diff, and says where", async () => {
    const { root, id } = await seedSession(temps);
    const out = join(await temps.make("agent-tape-export-"), "session.html");
    const run = await cli(["export", id, "--html", out, "--root", root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^Wrote ${out} \\(\\d+\\.\\d KiB\\): 5 events, 1 checkpoint\\. Open it`));
    const html = await readFile(out, "utf8");
    for (const seq of [1, 2, 3, 4, 5]) expect(html).toContain(`id="seq-${seq}"`);
    expect(html).toContain('<span class="del">-one</span><span class="ins">+two</span>');
    expect(await readdir(join(out, ".."))).toEqual(["session.html"]); // no temp file left beside it
  });

  it("--json reports the file, its size and what it holds", async () => {
    const { root, id } = await seedSession(temps);
    const out = join(await temps.make("agent-tape-export-"), "s.html");
    const run = await cli(["export", id, "--html", out, "--json", "--root", root]);
    expect(JSON.parse(run.stdout)).toMatchObject({ file: out, events: 5, checkpoints: 1 });
  });

  it("without --html is a usage error (exit 2)", async () => {
    const { root, id } = await seedSession(temps);
    const run = await cli(["export", id, "--root", root]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--html <file>");
  });
});
