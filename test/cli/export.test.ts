import { mkdir, readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, seedSession } from "./harness.js";
import { tempDir } from "../helpers/fixture.js";

describe("agent-tape export", () => {
  it("--html writes one page with every event and the checkpoint's diff, and says where", async () => {
    const { root, id } = await seedSession();
    const out = join(await tempDir("agent-tape-export-"), "session.html");
    const run = await cli(["export", id, "--html", out, "--root", root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^Wrote ${out} \\(\\d+\\.\\d KiB\\): 5 events, 1 checkpoint\\. Open it`));
    const html = await readFile(out, "utf8");
    for (const seq of [1, 2, 3, 4, 5]) expect(html).toContain(`id="seq-${seq}"`);
    expect(html).toContain('<span class="del">-one</span><span class="ins">+two</span>');
    expect(await readdir(join(out, ".."))).toEqual(["session.html"]); // no temp file left beside it
  });

  it("--json reports the file, its size and what it holds", async () => {
    const { root, id } = await seedSession();
    const out = join(await tempDir("agent-tape-export-"), "s.html");
    const run = await cli(["export", id, "--html", out, "--json", "--root", root]);
    expect(JSON.parse(run.stdout)).toMatchObject({ file: out, events: 5, checkpoints: 1 });
  });

  it("a page it cannot write is reported with the path given and the system's code, and leaves nothing", async () => {
    const { root, id } = await seedSession();
    const dir = await tempDir("agent-tape-export-");
    const missing = join(dir, "no-such-folder", "s.html");
    const run = await cli(["export", id, "--html", missing, "--root", root]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("ENOENT");
    expect(run.stderr).toContain(`Cannot write ${missing}`);
    expect(run.stderr).not.toContain(".tmp");

    const folder = join(dir, "a-folder");
    await mkdir(folder);
    const onFolder = await cli(["export", id, "--html", folder, "--root", root]);
    expect(onFolder.code).toBe(1);
    expect(onFolder.stderr).toContain(`Cannot write ${folder}`);
    expect(onFolder.stderr).not.toContain(".tmp");
    expect(await readdir(dir)).toEqual(["a-folder"]); // no temp file left beside it
  });

  it("without --html is a usage error (exit 2)", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["export", id, "--root", root]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--html <file>");
  });
});
