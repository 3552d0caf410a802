import { mkdir, realpath, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { confine, isInside, toPortable } from "../../src/checkpoint/confine.js";
import { tempDir } from "../helpers/fixture.js";

// A real workspace beside a real "outside" folder, both under one temp dir, so `../outside` is a real place.
let workspace: string;
let outside: string;
beforeEach(async () => {
  const base = await realpath(await tempDir("agent-tape-confine-"));
  workspace = join(base, "ws");
  outside = join(base, "outside");
  await mkdir(join(workspace, "src", "deep"), { recursive: true });
  await mkdir(outside);
  await writeFile(join(outside, "secret.txt"), "outside");
  await writeFile(join(workspace, "src", "a.ts"), "inside");
});

describe("confine: paths that stay inside", () => {
  it("normalises ./, doubled slashes and trailing slashes to a /-separated relative path", async () => {
    expect(await confine(workspace, "./src//a.ts")).toEqual({
      inside: true,
      path: "src/a.ts",
      absolute: join(workspace, "src", "a.ts"),
    });
    expect(await confine(workspace, "src/deep/")).toMatchObject({ inside: true, path: "src/deep" });
    expect(await confine(workspace, "src/deep/../a.ts")).toMatchObject({ inside: true, path: "src/a.ts" });
  });

  it("names the workspace itself '.'", async () => {
    expect(await confine(workspace, ".")).toEqual({ inside: true, path: ".", absolute: workspace });
    expect(await confine(workspace, workspace)).toEqual({ inside: true, path: ".", absolute: workspace });
  });

  it("accepts an absolute path inside the workspace", async () => {
    expect(await confine(workspace, join(workspace, "src", "a.ts"))).toMatchObject({ inside: true, path: "src/a.ts" });
  });

  it("accepts a path that does not exist yet, parents included", async () => {
    expect(await confine(workspace, "new/folder/file.txt")).toMatchObject({
      inside: true,
      path: "new/folder/file.txt",
    });
  });

  it("goes through a symlinked parent that points inside the workspace", async () => {
    await symlink(join(workspace, "src"), join(workspace, "alias"));
    expect(await confine(workspace, "alias/a.ts")).toMatchObject({ inside: true, path: "alias/a.ts" });
  });

  it("leaves a symlink in the last place alone, even one pointing outside: it is the thing recorded", async () => {
    await symlink(outside, join(workspace, "escape"));
    expect(await confine(workspace, "escape")).toEqual({
      inside: true,
      path: "escape",
      absolute: join(workspace, "escape"),
    });
  });

  it("accepts absolute paths spelled through a symlinked workspace as well as through its real path", async () => {
    const link = join(workspace, "..", "ws-link");
    await symlink(workspace, link);
    expect(await confine(workspace, join(link, "src", "a.ts"), link)).toMatchObject({ inside: true, path: "src/a.ts" });
    expect(await confine(workspace, join(workspace, "src", "a.ts"), link)).toMatchObject({
      inside: true,
      path: "src/a.ts",
    });
    expect(await confine(workspace, "src/a.ts", link)).toMatchObject({ inside: true, path: "src/a.ts" });
  });

  it("keeps a path under a regular file inside: reading it fails honestly (ENOTDIR), not as outside", async () => {
    expect(await confine(workspace, "src/a.ts/child")).toMatchObject({ inside: true, path: "src/a.ts/child" });
  });

  it("keeps a path under a name too long for the filesystem inside: reading it fails (ENAMETOOLONG)", async () => {
    const tooLong = "n".repeat(300);
    expect(await confine(workspace, `${tooLong}/file.txt`)).toMatchObject({
      inside: true,
      path: `${tooLong}/file.txt`,
    });
  });
});

describe("confine: paths that lead outside", () => {
  it("refuses ../ out of the workspace, even when it would come back", async () => {
    expect(await confine(workspace, "../outside/secret.txt")).toEqual({ inside: false, path: "../outside/secret.txt" });
    expect(await confine(workspace, "src/../../outside")).toEqual({ inside: false, path: "src/../../outside" });
    expect(await confine(workspace, "..")).toEqual({ inside: false, path: ".." });
  });

  it("refuses an absolute path elsewhere, and a sibling whose name merely starts like the workspace", async () => {
    expect(await confine(workspace, join(outside, "secret.txt"))).toMatchObject({ inside: false });
    expect(await confine(workspace, "/etc/passwd")).toMatchObject({ inside: false });
    expect(await confine(workspace, `${workspace}-sibling/file`)).toMatchObject({ inside: false });
  });

  it("refuses a path through a symlinked parent that points to a folder outside", async () => {
    await symlink(outside, join(workspace, "escape"));
    expect(await confine(workspace, "escape/secret.txt")).toEqual({ inside: false, path: "escape/secret.txt" });
    expect(await confine(workspace, "escape/not-there.txt")).toEqual({ inside: false, path: "escape/not-there.txt" });
  });

  it("refuses a path through an inside link to a folder holding a link outside", async () => {
    await symlink(outside, join(workspace, "src", "deep", "out"));
    await symlink(join(workspace, "src"), join(workspace, "alias"));
    expect(await confine(workspace, "alias/deep/out/secret.txt")).toMatchObject({ inside: false });
  });

  it("refuses a path through a dangling symlinked parent, which could be pointed anywhere later", async () => {
    await symlink(join(outside, "not-yet"), join(workspace, "dangling"));
    expect(await confine(workspace, "dangling/file.txt")).toMatchObject({ inside: false });
  });

  it("refuses a relative symlinked parent climbing out with ../", async () => {
    await symlink("../../outside", join(workspace, "src", "up"));
    expect(await confine(workspace, "src/up/secret.txt")).toMatchObject({ inside: false });
  });

  it("refuses a path holding a NUL byte", async () => {
    expect(await confine(workspace, "src/a.ts\0.png")).toMatchObject({ inside: false });
  });
});

describe("isInside and toPortable", () => {
  it("treats the root and what is below it as inside, a prefix-sharing sibling as outside", () => {
    expect(isInside("/w/ws", "/w/ws")).toBe(true);
    expect(isInside("/w/ws", "/w/ws/a")).toBe(true);
    expect(isInside("/w/ws", "/w/ws2/a")).toBe(false);
    expect(isInside("/", "/anything")).toBe(true);
  });

  it("turns the empty relative path into '.'", () => {
    expect(toPortable("")).toBe(".");
    expect(toPortable("a/b")).toBe("a/b");
  });
});
